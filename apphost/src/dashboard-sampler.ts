import { isVoterName, stateDirPaths } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { poll } from "./apphost-poll.js";
import { readKeptCredentials } from "./cluster-credentials.js";
import { clusterStatus, type VoterStatus } from "./cluster-status.js";
import { admissionLimits, type MetricsReading, metricsReading } from "./dashboard-admission-reading.js";
import type {
  AdmissionLimits,
  AdmissionPoint,
  AdmissionReading,
  DashboardSnapshot,
  DashboardVoter,
} from "./dashboard-messages.js";
import { clusterAdmission } from "./voter-admission.js";

export interface SamplerOptions {
  readonly stateDir: string;
  readonly intervalMs: number;
  /** How many points of admission history each voter keeps for the charts. */
  readonly historyPoints: number;
}

/**
 * A voter's admission usage and refusal counters, or null when its /metrics does not answer; asked
 * with the admin key kept in the state dir, as every public route but health needs a key.
 */
async function readMetrics(httpUrl: string, adminKey: string): Promise<MetricsReading | null> {
  try {
    const authorization = `Bearer ${adminKey}`;
    const response = await poll(`${httpUrl}/metrics`, APPHOST_DEFAULTS.probeTimeoutMs, { authorization });
    return response.ok ? metricsReading(await response.text()) : null;
  } catch {
    return null;
  }
}

/**
 * Reads the cluster once per interval, as `status --json` and `admission` do, with each running voter's
 * admission usage and refusal counters from its /metrics, and hands every snapshot to its listeners.
 * One reading at a time: a slow voter delays the next one instead of piling requests on it.
 */
export class DashboardSampler {
  private readonly listeners = new Set<(snapshot: DashboardSnapshot) => void>();
  private readonly history = new Map<string, AdmissionPoint[]>();
  /**
   * Each voter's limits as its admission status last gave them: the status needs a data-pool slot,
   * so a full pool refuses it just when the gauges matter most.
   */
  private readonly limits = new Map<string, AdmissionLimits>();
  private last: DashboardSnapshot | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly options: SamplerOptions) {}

  start(): void {
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.listeners.clear();
  }

  latest(): DashboardSnapshot | null {
    return this.last;
  }

  admissionHistory(): Record<string, AdmissionPoint[]> {
    return Object.fromEntries([...this.history].map(([voter, points]) => [voter, [...points]]));
  }

  subscribe(listener: (snapshot: DashboardSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async tick(): Promise<void> {
    try {
      const snapshot = await this.sample();
      if (this.stopped) return;
      this.last = snapshot;
      for (const voter of snapshot.voters) this.remember(snapshot.at, voter);
      for (const listener of this.listeners) listener(snapshot);
    } catch {
      // A state file being replaced or a cluster being torn down: the next reading will tell.
    } finally {
      if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.options.intervalMs);
    }
  }

  private async sample(): Promise<DashboardSnapshot> {
    const status = await clusterStatus(this.options.stateDir);
    const adminKey = readKeptCredentials(stateDirPaths(this.options.stateDir))?.adminKey;
    const voters = await Promise.all(
      status.voters.map(async (voter) => {
        // Only a ready voter is sure to hold the bootstrap admin: one still starting (a cluster
        // bootstrapping) would answer the key 401 and log each reading, which the console and `logs`
        // show, as they show any poll that went wrong. Until `up` has kept the key there is nothing to
        // ask with either.
        const answer =
          voter.health === "ready" && isVoterName(voter.name)
            ? await clusterAdmission(this.options.stateDir, voter.name).then(
                (answers) => answers[0] ?? { admission: null, error: "not asked" },
                (err: unknown) => ({
                  admission: null,
                  error: err instanceof Error ? err.message : String(err),
                }),
              )
            : { admission: null, error: `${voter.name} is not ready` };
        if (answer.admission !== null) this.limits.set(voter.name, admissionLimits(answer.admission));
        const limits = this.limits.get(voter.name);
        // Usage means nothing without limits, which a ready voter's admission status gave once.
        const metrics =
          voter.state === "running" && adminKey !== undefined && limits !== undefined
            ? await readMetrics(voter.httpUrl, adminKey)
            : null;
        const reading: AdmissionReading | null =
          limits === undefined || metrics === null || metrics.usage === null
            ? null
            : { limits, usage: metrics.usage, refusals: metrics.refusals };
        const error =
          voter.state !== "running" || reading !== null
            ? null
            : (answer.error ?? (metrics === null ? "its /metrics did not answer" : "no admission metrics"));
        return dashboardVoter(voter, reading, error);
      }),
    );
    return { at: Date.now(), voters };
  }

  private remember(at: number, voter: DashboardVoter): void {
    const points = this.history.get(voter.name) ?? [];
    points.push({ at, usage: voter.admission?.usage ?? null, refusals: voter.admission?.refusals ?? null });
    if (points.length > this.options.historyPoints)
      points.splice(0, points.length - this.options.historyPoints);
    this.history.set(voter.name, points);
  }
}

function dashboardVoter(
  voter: VoterStatus,
  admission: AdmissionReading | null,
  admissionError: string | null,
): DashboardVoter {
  return {
    name: voter.name,
    state: voter.state,
    pid: voter.pid,
    role: voter.role,
    term: voter.term,
    commitIndex: voter.commitIndex,
    appliedIndex: voter.appliedIndex,
    health: voter.health,
    member: voter.member,
    httpUrl: voter.httpUrl,
    peerAddress: voter.peerAddress,
    dataDir: voter.dataDir,
    forwardedEnv: voter.forwardedEnv,
    admission,
    admissionError,
  };
}
