import type { LogStorage } from "./log-storage.js";
import type { NodeId, RandomSource } from "./types.js";

/** Options of one Raft core. Time is counted in ticks; the driver decides how long a tick lasts. */
export interface RaftOptions {
  readonly id: NodeId;
  /** Holds the configuration too: the snapshot's, changed by the `conf` entries applied after it. */
  readonly storage: LogStorage;
  readonly random: RandomSource;
  /** The index the state machine has already applied (after a restart, its snapshot's index). */
  readonly applied?: number;
  /** Base election timeout; each election waits a random number of ticks in [T, 2T). */
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  /** Largest append message payload, in entry bytes (one entry is always allowed). */
  readonly maxSizePerMsg?: number;
  /** Append messages in flight to one follower in the replicate state. */
  readonly maxInflightMsgs?: number;
  /** Entry bytes in flight to one follower; 0 means unbounded. */
  readonly maxInflightBytes?: number;
  /** Bytes of proposed but uncommitted entries the leader accepts before refusing proposals; 0 means unbounded. */
  readonly maxUncommittedEntriesBytes?: number;
  /** Bytes of committed entries handed out in one Ready. */
  readonly maxCommittedSizePerReady?: number;
  /** Size of one InstallSnapshot chunk. */
  readonly snapshotChunkBytes?: number;
  /** Snapshot chunks in flight to one follower. */
  readonly maxInflightSnapshotChunks?: number;
}

export type ResolvedRaftOptions = Required<RaftOptions>;

export const RAFT_DEFAULTS = {
  applied: 0,
  electionTicks: 10,
  heartbeatTicks: 1,
  maxSizePerMsg: 1024 * 1024,
  maxInflightMsgs: 256,
  maxInflightBytes: 32 * 1024 * 1024,
  maxUncommittedEntriesBytes: 64 * 1024 * 1024,
  maxCommittedSizePerReady: 16 * 1024 * 1024,
  snapshotChunkBytes: 1024 * 1024,
  maxInflightSnapshotChunks: 4,
} as const satisfies Partial<RaftOptions>;

export function resolveRaftOptions(options: RaftOptions): ResolvedRaftOptions {
  // An option given as `undefined` takes its default, as if it were absent.
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
  const resolved = { ...RAFT_DEFAULTS, ...given } as ResolvedRaftOptions;
  const positive = [
    "electionTicks",
    "heartbeatTicks",
    "maxSizePerMsg",
    "maxInflightMsgs",
    "maxCommittedSizePerReady",
    "snapshotChunkBytes",
    "maxInflightSnapshotChunks",
  ] as const;
  for (const key of positive) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`raft option ${key} must be a positive integer, got ${value}`);
    }
  }
  // 0 means unbounded for the byte limits; `applied` starts at 0.
  for (const key of ["applied", "maxInflightBytes", "maxUncommittedEntriesBytes"] as const) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`raft option ${key} must be a non-negative integer, got ${value}`);
    }
  }
  if (resolved.heartbeatTicks >= resolved.electionTicks) {
    throw new RangeError("raft option heartbeatTicks must be smaller than electionTicks");
  }
  return resolved;
}
