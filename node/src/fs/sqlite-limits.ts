import type Database from "better-sqlite3";

/**
 * The native memory and disk bounds of one SQLite connection: its page cache, how much of the file it
 * may map into memory, and the size its WAL is cut back to once a checkpoint has copied all of it
 * (without one, a WAL that a long reader let grow keeps its largest size for good).
 */
export interface SqliteLimits {
  readonly cacheBytes: number;
  readonly mmapBytes: number;
  readonly walLimitBytes: number;
}

/** The limits of the voter's three databases. */
export interface StorageLimits {
  /** The Raft log's database. */
  readonly log: SqliteLimits;
  /** The state machine's database (the applying thread's connection). */
  readonly state: SqliteLimits;
  /** The full-text index (the search worker's connection). */
  readonly search: SqliteLimits;
}

const MiB = 1024 * 1024;

/**
 * The defaults, each bounded: a voter's native memory for SQLite is at most the three caches plus
 * what is mapped. The state database's cache holds the hot pages of a busy catalog and its indexes;
 * the log's and the index's are better-sqlite3's own default. Nothing is mapped: mapped pages count
 * toward the process's RSS and cannot be bounded by the cache. The log's and the state's WALs are
 * checkpointed every ~8 MiB, the index's every ~32 MiB (its writes come in large transactions).
 */
export const DEFAULT_STORAGE_LIMITS: StorageLimits = {
  log: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
  state: { cacheBytes: 64 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
  search: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 64 * MiB },
};

/** A WAL frame: a page and its 24-byte header. */
export function walFrameBytes(pageBytes: number): number {
  return pageBytes + 24;
}

/** The page size a database was created with: SQLite keeps it for good once the file holds a page. */
export function pageBytesOf(db: Database.Database): number {
  return db.pragma("page_size", { simple: true }) as number;
}

/** A WAL frame of a database with SQLite's default 4 KiB pages. */
export const WAL_FRAME_BYTES = walFrameBytes(4096);

/** Sets the limits on a connection; SQLite takes the page cache in KiB when the value is negative. */
export function applySqliteLimits(db: Database.Database, limits: SqliteLimits): void {
  db.pragma(`cache_size = -${Math.ceil(limits.cacheBytes / 1024)}`);
  db.pragma(`mmap_size = ${limits.mmapBytes}`);
  db.pragma(`journal_size_limit = ${limits.walLimitBytes}`);
}

/**
 * The most WAL bytes a checkpoint may wait for under `walLimitBytes`: half of it, so that the WAL is
 * checkpointed and restarted before it passes the size it is cut back to, and `preferred` when that is
 * smaller.
 */
export function checkpointBytesWithin(walLimitBytes: number, preferred: number): number {
  return Math.max(1, Math.min(preferred, Math.floor(walLimitBytes / 2)));
}
