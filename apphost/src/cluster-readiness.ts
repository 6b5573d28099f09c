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
  const ready =
    leader !== undefined && voters.every((v) => v.health.ready && v.health.leader === leader.name);
  return {
    voters,
    elapsedMs: Date.now() - startedAt,
    ready,
    leader: leader?.name ?? null,
    term: leader?.health.term ?? null,
  };
}

/** One line per state: `voter1 leader (ready) · voter2 follower · voter3 unreachable`. */
export function describeSnapshot(snapshot: ClusterSnapshot): string {
  return snapshot.voters
    .map(({ name, health }) => {
      if (!health.reachable) return `${name} starting`;
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
    if (snapshot.ready) return snapshot;
    if (snapshot.elapsedMs >= timeoutMs)
      throw new ReadinessTimeoutError(timeoutMs, describeSnapshot(snapshot));
    await Promise.race([new Promise((resolve) => setTimeout(resolve, pollMs)), failure]);
  }
}
