import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { ReadinessTimeoutError } from "./apphost-errors.js";
import { probeVoter, type VoterHealth } from "./voter-health.js";

export interface ProbeTarget {
  readonly name: string;
  readonly httpUrl: string;
}

export interface ClusterSnapshot {
  readonly voters: readonly { readonly name: string; readonly health: VoterHealth }[];
  readonly elapsedMs: number;
  /** Every voter ready, exactly one leader, and every voter following it. */
  readonly ready: boolean;
  /**
   * Voters that answer as new members not yet voters: they lost their data and came back as new members
   * (`voterN~<token>`), which ask the leader to add them as learners and promote them once caught up (or
   * an admin does, `replace`). The others serve on without them.
   */
  readonly newMembers: readonly string[];
  /** A leader, and every voter but the new members ready and following it. */
  readonly readyWithoutNewMembers: boolean;
  readonly leader: string | null;
  readonly term: number | null;
}

export async function probeCluster(
  targets: readonly ProbeTarget[],
  startedAt: number,
  probeTimeoutMs: number = APPHOST_DEFAULTS.probeTimeoutMs,
): Promise<ClusterSnapshot> {
  const voters = await Promise.all(
    targets.map(async (t) => ({ name: t.name, health: await probeVoter(t.httpUrl, probeTimeoutMs) })),
  );
  const leaders = voters.filter((v) => v.health.role === "leader");
  const leader = leaders.length === 1 ? leaders[0]! : undefined;
  const following = (v: (typeof voters)[number]): boolean =>
    leader !== undefined && v.health.ready && v.health.leader === leader.name;
  const newMembers = voters
    .filter(
      ({ health }) =>
        health.reachable && !health.failed && health.memberId !== null && health.member !== "voter",
    )
    .map((v) => v.name);
  return {
    voters,
    elapsedMs: Date.now() - startedAt,
    ready: voters.every(following),
    newMembers,
    readyWithoutNewMembers: voters.every((v) => following(v) || newMembers.includes(v.name)),
    leader: leader?.name ?? null,
    term: leader?.health.term ?? null,
  };
}

/** One line per state: `voter1 leader (ready) · voter2 follower · voter3 unreachable`. */
export function describeSnapshot(snapshot: ClusterSnapshot): string {
  return snapshot.voters
    .map(({ name, health }) => {
      if (!health.reachable) return `${name} starting`;
      if (snapshot.newMembers.includes(name)) {
        return `${name} new member, ${health.member === "learner" ? "a learner" : "not added"}`;
      }
      return `${name} ${health.role}${health.ready ? " (ready)" : ""}`;
    })
    .join(" · ");
}

export interface ReadinessOptions {
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  readonly onProgress?: (snapshot: ClusterSnapshot) => void;
  /** Rejects when waiting can stop early: a voter exited. */
  readonly failure?: Promise<never>;
  /**
   * Also done when the only voters not ready are new members (ClusterSnapshot.newMembers): the cluster
   * serves without them until they are added and caught up, which may take long, or an admin.
   */
  readonly acceptNewMembers?: boolean;
}

/** Polls every voter until the cluster is ready; throws ReadinessTimeoutError, or what `failure` rejects with. */
export async function waitForClusterReady(
  targets: readonly ProbeTarget[],
  options: ReadinessOptions = {},
): Promise<ClusterSnapshot> {
  const timeoutMs = options.timeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs;
  const pollMs = options.pollMs ?? APPHOST_DEFAULTS.pollIntervalMs;
  const startedAt = Date.now();
  const failure = options.failure ?? new Promise<never>(() => {});
  for (;;) {
    const snapshot = await Promise.race([probeCluster(targets, startedAt), failure]);
    options.onProgress?.(snapshot);
    if (snapshot.ready || (options.acceptNewMembers && snapshot.readyWithoutNewMembers)) return snapshot;
    if (snapshot.elapsedMs >= timeoutMs)
      throw new ReadinessTimeoutError(timeoutMs, describeSnapshot(snapshot));
    await Promise.race([new Promise((resolve) => setTimeout(resolve, pollMs)), failure]);
  }
}
