import type { SimNode } from "./node-registry.js";

/**
 * How far the final phase has got, as one number that grows only while the cluster heads for
 * convergence: the leader's commit index, and for each running node the index it applied and, when it
 * follows that leader in the leader's term, the length of its log. A follower catching up through a
 * shuffled pipeline raises it by about one entry per round trip; elections that commit nothing, or a
 * log truncated and regrown to where it was, do not raise it past what it was before.
 */
export function convergenceProgress(leader: SimNode | null, running: readonly SimNode[]): number {
  const status = leader?.status ?? null;
  let progress = status?.commit ?? 0;
  for (const node of running) {
    progress += node.state.live.applied;
    const s = node.status;
    if (status !== null && s !== null && s.term === status.term && s.leader === leader?.id)
      progress += s.lastIndex;
  }
  return progress;
}

/**
 * Decides when the final phase has failed to converge: when it has gone `window` steps without
 * raising its progress above the best it reached, or has run `cap` steps in all. A fixed budget for
 * the whole phase cannot tell a slow catch-up from a stuck one: a follower far behind on a network
 * that reorders takes steps in proportion to what it lacks (go-back-N replication, as etcd's), while
 * a cluster that cannot converge makes no progress at all.
 */
export class ConvergenceWatch {
  private best = Number.NEGATIVE_INFINITY;
  private bestAt: number;

  constructor(
    private readonly start: number,
    private readonly window: number,
    private readonly cap: number,
  ) {
    this.bestAt = start;
  }

  /** Undefined while the phase may go on; otherwise why it failed, for the liveness violation. */
  check(step: number, progress: number): string | undefined {
    if (progress > this.best) {
      this.best = progress;
      this.bestAt = step;
    }
    if (step - this.bestAt >= this.window)
      return `no progress toward convergence in ${this.window} steps (${step - this.start} steps after healing)`;
    if (step - this.start >= this.cap) return `no convergence within ${this.cap} steps after healing`;
    return undefined;
  }
}
