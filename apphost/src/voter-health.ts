import { poll } from "./apphost-poll.js";

/** What one voter says about itself on `GET /health/ready`. */
export interface VoterHealth {
  /** The HTTP endpoint answered at all. */
  readonly reachable: boolean;
  readonly ready: boolean;
  readonly role: VoterRole;
  readonly term: number | null;
  readonly leader: string | null;
  /** The Raft member ID the voter holds now (a new one after it lost its data). */
  readonly memberId: string | null;
  /** What it is in the configuration it has applied; null while it is not a member (yet). */
  readonly member: MemberKind | null;
  readonly commitIndex: number | null;
  readonly appliedIndex: number | null;
  /** It answered, but its storage or apply has failed (fail-stop): it is on its way out. */
  readonly failed: boolean;
}

export type MemberKind = "voter" | "learner";

export type VoterRole = "leader" | "follower" | "candidate" | "unknown";

export const UNREACHABLE: VoterHealth = {
  reachable: false,
  ready: false,
  role: "unknown",
  term: null,
  leader: null,
  memberId: null,
  member: null,
  commitIndex: null,
  appliedIndex: null,
  failed: false,
};

function roleOf(raw: unknown): VoterRole {
  // Pre-vote is a candidate's first phase; the contract's roles do not distinguish it.
  if (raw === "pre-candidate" || raw === "candidate") return "candidate";
  return raw === "leader" || raw === "follower" ? raw : "unknown";
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
}

/**
 * Probes one voter. A ready voter answers 200 with `detail`; a voter that is not ready answers 503 with
 * the same detail under `error.details`. Never throws: anything else counts as unreachable.
 */
export async function probeVoter(httpUrl: string, timeoutMs: number): Promise<VoterHealth> {
  try {
    const response = await poll(`${httpUrl}/health/ready`, timeoutMs);
    const body = record(await response.json().catch(() => undefined));
    const detail = response.ok ? record(body?.detail) : record(record(body?.error)?.details);
    const term = detail?.term;
    const leader = detail?.leader;
    const memberId = detail?.memberId;
    const member = detail?.member;
    const commit = detail?.commit;
    const applied = detail?.applied;
    return {
      reachable: true,
      ready: response.status === 200,
      role: roleOf(detail?.role),
      term: typeof term === "number" ? term : null,
      leader: typeof leader === "string" ? leader : null,
      memberId: typeof memberId === "string" ? memberId : null,
      member: member === "voter" || member === "learner" ? member : null,
      commitIndex: typeof commit === "number" ? commit : null,
      appliedIndex: typeof applied === "number" ? applied : null,
      failed: detail?.failed !== undefined,
    };
  } catch {
    return UNREACHABLE;
  }
}

/** Whether the voter's HTTP endpoint answers at all (`GET /health/live`). */
export async function isLive(httpUrl: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await poll(`${httpUrl}/health/live`, timeoutMs);
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}
