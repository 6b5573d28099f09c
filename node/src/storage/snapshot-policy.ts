import { StorageArgumentError } from "./storage-errors.js";

export interface SnapshotPolicyOptions {
  /** Snapshot once this many applied entries follow the current snapshot... */
  readonly entries: number;
  /** ...or once those entries hold this many bytes (as `entrySize` counts them), whichever comes first. */
  readonly bytes: number;
  /**
   * Entries kept in the log behind a new snapshot, so a follower only a little behind catches up from
   * the log instead of receiving the whole snapshot.
   */
  readonly retainEntries: number;
}

/** What the policy reads from the log: the current snapshot and the size of a range of entries. */
export interface SnapshotPolicyLog {
  snapshotIndex(): number;
  firstIndex(): number;
  /** Bytes of the entries in [lo, hi). */
  byteSize(lo: number, hi: number): number;
}

export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicyOptions = {
  entries: 50_000,
  bytes: 64 * 1024 * 1024,
  retainEntries: 5_000,
};

/** Decides when the state machine should be snapshotted and how far the log is then compacted. */
export class SnapshotPolicy {
  readonly options: SnapshotPolicyOptions;

  constructor(options: SnapshotPolicyOptions = DEFAULT_SNAPSHOT_POLICY) {
    for (const key of ["entries", "bytes"] as const) {
      if (!Number.isSafeInteger(options[key]) || options[key] < 1) {
        throw new StorageArgumentError(
          `snapshot policy ${key} must be a positive integer, got ${options[key]}`,
        );
      }
    }
    if (!Number.isSafeInteger(options.retainEntries) || options.retainEntries < 0) {
      throw new StorageArgumentError(
        `snapshot policy retainEntries must be a non-negative integer, got ${options.retainEntries}`,
      );
    }
    this.options = options;
  }

  /** Whether to snapshot now, the state machine having applied up to `appliedIndex`. */
  due(log: SnapshotPolicyLog, appliedIndex: number): boolean {
    const snap = log.snapshotIndex();
    const count = appliedIndex - snap;
    if (count <= 0) return false;
    // Entries before firstIndex were compacted away, so only the retained part is counted; compaction
    // never passes the snapshot, so that part holds all of (snap, appliedIndex].
    const lo = Math.max(snap + 1, log.firstIndex());
    return count >= this.options.entries || log.byteSize(lo, appliedIndex + 1) >= this.options.bytes;
  }

  /** The index to compact the log to once a snapshot at `snapshotIndex` is durable. */
  compactionIndex(snapshotIndex: number): number {
    return Math.max(0, snapshotIndex - this.options.retainEntries);
  }
}
