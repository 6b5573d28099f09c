import { StorageArgumentError } from "./storage-errors.js";

export interface SnapshotPolicyOptions {
  /** Snapshot once this many applied entries follow the current snapshot... */
  readonly entries: number;
  /** ...or once those entries hold this many bytes (as `entrySize` counts them), whichever comes first. */
  readonly bytes: number;
  /**
   * Either way, only once those entries hold at least `ratio` times the current snapshot's size (0:
   * no such bound) or number ten times `entries`. A snapshot copies the whole state, so with a fixed
   * interval its cost per entry grows with the state; this bounds the bytes snapshots write to
   * 1/ratio of the bytes logged, and the log to about ratio times the state (LogCabin's
   * snapshotRatio).
   */
  readonly ratio: number;
  /**
   * Entries kept in the log behind a new snapshot, so a follower only a little behind catches up from
   * the log instead of receiving the whole snapshot.
   */
  readonly retainEntries: number;
}

/** What the policy reads from the log: the current snapshot and the size of a range of entries. */
export interface SnapshotPolicyLog {
  snapshotIndex(): number;
  /** The size of the current snapshot's file, 0 when there is none. */
  snapshotBytes(): number;
  firstIndex(): number;
  /** Bytes of the entries in [lo, hi). */
  byteSize(lo: number, hi: number): number;
}

export const DEFAULT_SNAPSHOT_POLICY: SnapshotPolicyOptions = {
  entries: 50_000,
  bytes: 64 * 1024 * 1024,
  ratio: 2,
  retainEntries: 5_000,
};

/**
 * The ratio never holds a snapshot back past this many times the entry interval: with small entries
 * and a large state the log would otherwise keep millions of entries, each costing memory in the log
 * index and time in the recovery scan at open.
 */
const RATIO_ENTRIES_CAP = 10;

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
    if (!Number.isFinite(options.ratio) || options.ratio < 0) {
      throw new StorageArgumentError(
        `snapshot policy ratio must be a non-negative number, got ${options.ratio}`,
      );
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
    const bytes = log.byteSize(lo, appliedIndex + 1);
    const held =
      bytes < this.options.ratio * log.snapshotBytes() && count < RATIO_ENTRIES_CAP * this.options.entries;
    return !held && (count >= this.options.entries || bytes >= this.options.bytes);
  }

  /** The index to compact the log to once a snapshot at `snapshotIndex` is durable. */
  compactionIndex(snapshotIndex: number): number {
    return Math.max(0, snapshotIndex - this.options.retainEntries);
  }
}
