import type { FsyncSite } from "../fs/fsync.js";
import { checkpointBytesWithin, type SqliteLimits } from "../fs/sqlite-limits.js";
import type { ConfState } from "../raft/types.js";
import type { FaultHook } from "./fault-hook.js";
import { StorageArgumentError } from "./storage-errors.js";

export interface DurableLogStoreOptions {
  /** The voter set recorded when the directory is new; an existing directory keeps the one it holds. */
  readonly conf: ConfState;
  /** Bounds of the in-memory cache of the newest entries. */
  readonly cacheEntries?: number;
  readonly cacheBytes?: number;
  /** Estimated WAL bytes after which a background checkpoint starts; at most half the WAL's limit. */
  readonly checkpointBytes?: number;
  /** The database connection's page cache, mapping and WAL limit. */
  readonly sqlite?: SqliteLimits;
  /**
   * Bytes each of the two journal files is preallocated to; writing moves to the other file once the
   * one being written passes half of it.
   */
  readonly journalBytes?: number;
  /** Milliseconds a journaled batch may wait before the database takes it in. */
  readonly absorbIntervalMs?: number;
  /** Compacted rows deleted per background step: bounds how long one step holds the event loop. */
  readonly gcStepEntries?: number;
  /** Milliseconds between two background deletion steps. */
  readonly gcStepIntervalMs?: number;
  /**
   * Where the journal's fdatasync runs at first (setFsyncSite changes it). "event-loop" (the default)
   * blocks the event loop for exactly one fsync per group commit, and runs more single-entry batches
   * per second where an fsync takes a fraction of a millisecond, since the two thread hand-offs of
   * "thread-pool" add to each. "thread-pool" frees the event loop during every fsync: the better
   * choice on a disk whose fsync takes milliseconds, and for a caller with work to overlap with it (a
   * leader applies committed entries meanwhile, see DurableLogWriter.syncStarted; the figures are in
   * docs/decisions/0011-leader-applies-during-its-fsync.md).
   */
  readonly fsync?: FsyncSite;
  /** Crash tests only: called between the durable steps of a write. */
  readonly faultHook?: FaultHook;
}

const DEFAULTS = {
  cacheEntries: 8192,
  cacheBytes: 32 * 1024 * 1024,
  // Smaller checkpoints, more often: a checkpoint's page copy and fsyncs load the disk that every
  // voter's next fsync waits on. Three voters sharing a disk wrote a little faster with 8 MiB than
  // with 32, and the log alone pays a little (docs/decisions/0017-log-database-background-work.md).
  checkpointBytes: 8 * 1024 * 1024,
  // Deleting rows writes WAL frames that the next append's fdatasync must flush too. Behind a
  // snapshot, large steps back to back held the next fsync of every voter at once; paced, the
  // deletions ride along with the appends' fsyncs a few pages at a time, still several times any
  // append rate (docs/decisions/0017-log-database-background-work.md).
  gcStepEntries: 256,
  gcStepIntervalMs: 10,
  // Switching files every 16 MiB costs one database commit and one background fsync of its WAL.
  journalBytes: 32 * 1024 * 1024,
  // Batches taken in together share the database's pages: at one writer, ~20 entries a commit.
  absorbIntervalMs: 20,
};

/** The options with every default filled in and every value checked. */
export type ResolvedOptions = Required<Omit<DurableLogStoreOptions, "conf" | "faultHook" | "sqlite">> & {
  readonly faultHook: FaultHook | undefined;
};

/**
 * Fills in the defaults and checks every value, throwing StorageArgumentError for the first bad one;
 * `sqlite` is the connection's limits, which cap `checkpointBytes`.
 */
export function resolveOptions(options: DurableLogStoreOptions, sqlite: SqliteLimits): ResolvedOptions {
  // A checkpoint starts by half the WAL's limit, so that the WAL restarts before it passes it.
  const checkpointBytes = checkpointBytesWithin(
    sqlite.walLimitBytes,
    positive("checkpointBytes", options.checkpointBytes ?? DEFAULTS.checkpointBytes),
  );
  return {
    cacheEntries: positive("cacheEntries", options.cacheEntries ?? DEFAULTS.cacheEntries),
    cacheBytes: positive("cacheBytes", options.cacheBytes ?? DEFAULTS.cacheBytes),
    checkpointBytes,
    gcStepEntries: positive("gcStepEntries", options.gcStepEntries ?? DEFAULTS.gcStepEntries),
    gcStepIntervalMs: nonNegative("gcStepIntervalMs", options.gcStepIntervalMs ?? DEFAULTS.gcStepIntervalMs),
    journalBytes: nonNegative("journalBytes", options.journalBytes ?? DEFAULTS.journalBytes),
    absorbIntervalMs: nonNegative("absorbIntervalMs", options.absorbIntervalMs ?? DEFAULTS.absorbIntervalMs),
    fsync: options.fsync ?? "event-loop",
    faultHook: options.faultHook,
  };
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new StorageArgumentError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new StorageArgumentError(`${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/** Checks an index or bound a caller passes to the store's reads. */
export function checkInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value))
    throw new StorageArgumentError(`${name} must be an integer, got ${value}`);
}
