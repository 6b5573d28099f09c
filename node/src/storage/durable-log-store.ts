import { closeSync, existsSync, fdatasync, fdatasyncSync, openSync } from "node:fs";
import { join } from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { promisify } from "node:util";
import { type FsyncSite, fsyncPath } from "../fs/fsync.js";
import { makePrivateDir } from "../fs/private-dir.js";
import { DEFAULT_STORAGE_LIMITS, type SqliteLimits } from "../fs/sqlite-limits.js";
import { type CheckpointResult, WalCheckpointer } from "../fs/wal-checkpointer.js";
import {
  LogCompactedError,
  LogUnavailableError,
  RaftInvariantError,
  SnapshotOutOfDateError,
} from "../raft/errors.js";
import { entrySize, type LogStorage, limitSize } from "../raft/log-storage.js";
import type { ConfState, Entry, HardState, Snapshot } from "../raft/types.js";
import { AckWatermark, type Watermark } from "./ack-watermark.js";
import { EntryCache } from "./entry-cache.js";
import type { FaultHook } from "./fault-hook.js";
import { type BatchState, LogDatabase, type LogState } from "./log-database.js";
import { LogIndex } from "./log-index.js";
import { type JournalBatch, type JournalOp, LogJournal } from "./log-journal.js";
import { type SnapshotFile, SnapshotFileStore } from "./snapshot-file-store.js";
import type { SnapshotPolicyLog } from "./snapshot-policy.js";
import type { SnapshotReader } from "./snapshot-reader.js";
import {
  StorageArgumentError,
  StorageClosedError,
  StorageCorruptionError,
  StorageError,
  StorageFailedError,
} from "./storage-errors.js";
import { checkWriteShape } from "./write-shape.js";

/** The files of a data directory. */
export const LOG_FILE = "raft-log.sqlite";
export const WATERMARK_FILE = "raft-log.ack";
export const SNAPSHOT_DIR = "snapshots";

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
/** Journaled bytes past which the database takes the batches in at once rather than on the timer. */
const ABSORB_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Entries the timer's absorb takes in one transaction before yielding to the event loop, which a few
 * thousand at once held for many milliseconds; the rest follows in the next turns
 * (docs/decisions/0017-log-database-background-work.md).
 */
const ABSORB_STEP_ENTRIES = 512;

type ResolvedOptions = Required<Omit<DurableLogStoreOptions, "conf" | "faultHook" | "sqlite">> & {
  readonly faultHook: FaultHook | undefined;
};

/**
 * WAL bytes a commit adds beyond its entries, for the checkpoint estimate: a frame is a 4 KiB page
 * plus its header, and a commit rewrites at least the leaf it appends to, often an interior page or
 * the state row's page too.
 */
const PAGES_PER_COMMIT_BYTES = 2 * 4120;

/** One unit of the write side, applied in order within a group commit. */
export type StoreOp =
  /** What one Ready asks to persist; its snapshot (if any) is already a sealed file. */
  | {
      readonly kind: "persist";
      readonly snapshot: SnapshotFile | null;
      readonly entries: readonly Entry[];
      readonly hardState: HardState | null;
    }
  /** A snapshot of the local state machine, taken at an index the log still holds. */
  | { readonly kind: "record-snapshot"; readonly snapshot: SnapshotFile };

/** Counters and latency histograms for monitoring and benchmarks. */
export interface StorageStats {
  /** Group commits (each one journal record, or one database transaction) and fsyncs completed. */
  commits: number;
  syncs: number;
  checkpoints: number;
  /** Microseconds each commit held the event loop (the transaction, no fsync). */
  readonly commitMicros: RecordableHistogram;
  /** Microseconds from starting a WAL fsync to its completion. */
  readonly syncMicros: RecordableHistogram;
}

const fdatasyncAsync = promisify(fdatasync);

/** An op as the database takes it in: whether its entries replace some from their first index on. */
interface AbsorbOp extends JournalOp {
  readonly truncates: boolean;
}

/** A journaled batch the database has not taken in yet, with the hard state it leaves and its journal bytes. */
interface PendingBatch extends JournalBatch {
  readonly ops: readonly AbsorbOp[];
  readonly hardState: HardState;
  readonly bytes: number;
}

/**
 * The Raft log on disk (better-sqlite3, WAL mode) implementing the core's `LogStorage`, with the same
 * behaviour as `MemoryStorage`. Reads are answered from memory where they are hot: the log's bounds
 * and every position's term from a `LogIndex`, the newest entries from an `EntryCache`; older entries
 * come from SQLite, checksum-verified.
 *
 * Writes go through `DurableLogWriter`, which calls `commit` for a whole group of batches and then
 * `sync`. A group that only appends entries and sets the hard state, all but a few, is one record in
 * the `LogJournal` and one fdatasync of it; the database takes journaled batches in every
 * `absorbIntervalMs`, in one transaction and without an fsync of its own (the journal vouches for
 * them until a switch of journal files fsyncs the database's WAL in the background). A group carrying
 * a snapshot is one database transaction, after everything journaled is taken in, made durable by an
 * fdatasync of the database's WAL. Everything committed is visible to reads at once; only `sync` makes
 * it durable, and the writer acknowledges nothing before.
 */
export class DurableLogStore implements LogStorage, SnapshotPolicyLog {
  readonly stats: StorageStats = {
    commits: 0,
    syncs: 0,
    checkpoints: 0,
    commitMicros: createHistogram(),
    syncMicros: createHistogram(),
  };
  /** Set once the store is closed or has failed: every later call throws it. */
  private stopped: StorageError | null = null;
  private syncing: Promise<void> | null = null;
  private ackedSeq: number;
  /**
   * The watermark durable now but not yet written: written after the turn in which the fsync
   * returned, so the acknowledgements that fsync released leave without waiting for its pwrite.
   */
  private pendingMark: Watermark | null = null;
  private markTimer: NodeJS.Immediate | null = null;
  /** Superseded snapshot files, deletable once the commit `seq` that superseded them is durable. */
  private retired: { file: string; seq: number }[] = [];
  private cleanup: Promise<void> = Promise.resolve();
  private walBytes = 0;
  /**
   * Within a commit: the last entry it inserted, and whether it changed what only the state row holds
   * (compaction point, snapshot). Unless it did, the batch state is recorded on that entry's row.
   */
  private lastInserted: Entry | null = null;
  private stateRowDirty = false;
  /** The checkpoint cycle running, awaited by `close`. */
  private checkpointing: Promise<void> | null = null;
  /** Pending while the final pass of a checkpoint runs: commits wait for it (see maybeCheckpoint). */
  private gate: Promise<void> | null = null;
  /** The lowest row index that may still be stored below the compaction point, or null when none is. */
  private gcNext: number | null;
  private gcTimer: NodeJS.Timeout | null = null;
  /** Journaled batches the database has not taken in, oldest first, and their journal bytes. */
  private pending: PendingBatch[] = [];
  private pendingBytes = 0;
  /** Cancels the scheduled absorb, if one is. */
  private cancelAbsorb: (() => void) | null = null;
  /** Background fsyncs of the database's WAL under way, settled either way. */
  private readonly backgroundSyncs = new Set<Promise<void>>();
  /** The database's WAL holds a group commit that only its fdatasync makes durable. */
  private databaseUnsynced = false;
  /** Where `sync` runs its fsyncs: the `fsync` option until `setFsyncSite`. */
  private syncSite: FsyncSite;
  /** Told once, when a failure stops the store (see onFailure). */
  private readonly failureListeners: ((err: StorageError) => void)[] = [];
  /** Told after every `sync` (see onSynced). */
  private readonly syncListeners: ((seconds: number) => void)[] = [];

  private constructor(
    readonly dir: string,
    private readonly db: LogDatabase,
    private state: LogState,
    private readonly index: LogIndex,
    private readonly cache: EntryCache,
    /** The snapshot files; a follower receives a streamed snapshot through `snapshotFiles.receive`. */
    readonly snapshotFiles: SnapshotFileStore,
    private readonly walFd: number,
    private readonly journal: LogJournal,
    private readonly watermark: AckWatermark,
    private readonly checkpointer: WalCheckpointer,
    private readonly options: ResolvedOptions,
    gcNext: number | null,
  ) {
    this.ackedSeq = state.seq;
    this.syncSite = options.fsync;
    this.gcNext = gcNext;
    this.scheduleGc();
  }

  /**
   * Opens the data directory `dir`, creating it when new, and returns exactly what was durable:
   * every entry is checksum-verified, the indexes checked contiguous and the terms non-decreasing,
   * and the database compared with the acknowledgement watermark. Any damage throws
   * StorageCorruptionError naming the file and the index.
   */
  static open(dir: string, options: DurableLogStoreOptions): DurableLogStore {
    const sqlite = options.sqlite ?? DEFAULT_STORAGE_LIMITS.log;
    // A checkpoint starts by half the WAL's limit, so that the WAL restarts before it passes it.
    const checkpointBytes = Math.min(
      positive("checkpointBytes", options.checkpointBytes ?? DEFAULTS.checkpointBytes),
      Math.max(1, Math.floor(sqlite.walLimitBytes / 2)),
    );
    const opts: ResolvedOptions = {
      cacheEntries: positive("cacheEntries", options.cacheEntries ?? DEFAULTS.cacheEntries),
      cacheBytes: positive("cacheBytes", options.cacheBytes ?? DEFAULTS.cacheBytes),
      checkpointBytes,
      gcStepEntries: positive("gcStepEntries", options.gcStepEntries ?? DEFAULTS.gcStepEntries),
      gcStepIntervalMs: nonNegative(
        "gcStepIntervalMs",
        options.gcStepIntervalMs ?? DEFAULTS.gcStepIntervalMs,
      ),
      journalBytes: nonNegative("journalBytes", options.journalBytes ?? DEFAULTS.journalBytes),
      absorbIntervalMs: nonNegative(
        "absorbIntervalMs",
        options.absorbIntervalMs ?? DEFAULTS.absorbIntervalMs,
      ),
      fsync: options.fsync ?? "event-loop",
      faultHook: options.faultHook,
    };
    makePrivateDir(dir);
    const logPath = join(dir, LOG_FILE);
    const walPath = `${logPath}-wal`;
    const ackPath = join(dir, WATERMARK_FILE);
    const mark = AckWatermark.read(ackPath);
    if (mark !== null && !existsSync(logPath)) {
      throw new StorageCorruptionError(
        logPath,
        null,
        `the log database is missing, yet writes up to index ${mark.lastIndex} were acknowledged`,
      );
    }
    const db = LogDatabase.open(logPath, options.conf, sqlite);
    let walFd: number | null = null;
    let journal: LogJournal | null = null;
    try {
      const stored = db.readState();
      const { index, cache, batch } = recover(db, stored, opts.cacheEntries, opts.cacheBytes);
      journal = LogJournal.open(dir, { preallocateBytes: opts.journalBytes });
      const replayed = replay(
        db,
        { ...stored, seq: batch.seq, hardState: batch.hardState },
        index,
        cache,
        journal,
      );
      const state: LogState = { ...stored, seq: replayed.seq, hardState: replayed.hardState };
      if (mark === null && state.seq > 0) {
        throw new StorageCorruptionError(ackPath, null, "the acknowledgement watermark is missing");
      }
      if (mark !== null && mark.seq > state.seq) {
        throw new StorageCorruptionError(
          journal.path,
          Math.min(index.lastIndex, mark.lastIndex) + 1,
          `acknowledged writes are missing: write batch ${mark.seq} (log up to index ${mark.lastIndex}) ` +
            `was acknowledged but ${LOG_FILE}, its WAL and the journal hold only up to batch ${state.seq} ` +
            `(log up to index ${index.lastIndex}); the WAL or the journal was truncated or damaged`,
        );
      }
      if (state.hardState.commit > index.lastIndex) {
        throw new StorageCorruptionError(
          logPath,
          index.lastIndex + 1,
          `the log ends at ${index.lastIndex} but index ${state.hardState.commit} was committed`,
        );
      }
      const snapshotFiles = SnapshotFileStore.open(join(dir, SNAPSHOT_DIR), opts.faultHook);
      checkSnapshot(logPath, state, index, snapshotFiles);
      snapshotFiles.removeAllBut(state.snapshot.file);
      const lowest = db.minIndex();
      // Fold the WAL into the database now (fsynced): recovery is done, the next open scans one file,
      // and the journal may start over.
      db.checkpointAndTruncate();
      journal.restart();
      walFd = openSync(walPath, "r+");
      fsyncPath(dir);
      const watermark = AckWatermark.open(ackPath, { seq: state.seq, lastIndex: index.lastIndex });
      return new DurableLogStore(
        dir,
        db,
        state,
        index,
        cache,
        snapshotFiles,
        walFd,
        journal,
        watermark,
        new WalCheckpointer(logPath),
        opts,
        lowest !== null && lowest <= state.startIndex ? lowest : null,
      );
    } catch (err) {
      if (walFd !== null) closeSync(walFd);
      journal?.close();
      db.close();
      throw err;
    }
  }

  // --- LogStorage -------------------------------------------------------------------------------

  initialState(): { hardState: HardState; conf: ConfState } {
    this.checkUsable();
    return { hardState: this.state.hardState, conf: this.state.snapshot.meta.conf };
  }

  entries(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    this.checkUsable();
    checkInteger("lo", lo);
    checkInteger("hi", hi);
    if (Number.isNaN(maxBytes)) throw new StorageArgumentError("maxBytes must be a number");
    const offset = this.index.startIndex;
    const last = this.index.lastIndex;
    if (lo <= offset) throw new LogCompactedError(lo, offset + 1);
    if (hi > last + 1) throw new LogUnavailableError(hi - 1, last);
    if (lo >= hi) return [];
    const cached = this.cache.firstIndex;
    if (lo >= cached) return limitSize(this.cache.slice(lo, hi), maxBytes);
    return this.readThrough(lo, hi, maxBytes);
  }

  term(index: number): number {
    this.checkUsable();
    checkInteger("index", index);
    const offset = this.index.startIndex;
    if (index < offset) throw new LogCompactedError(index, offset + 1);
    if (index > this.index.lastIndex) throw new LogUnavailableError(index, this.index.lastIndex);
    return this.index.term(index);
  }

  firstIndex(): number {
    this.checkUsable();
    return this.index.firstIndex;
  }

  lastIndex(): number {
    this.checkUsable();
    return this.index.lastIndex;
  }

  /**
   * The snapshot as the core knows it: metadata, size and checksum, never its bytes, which a driver
   * streams from the file with `openSnapshotReader`.
   */
  snapshot(): Snapshot {
    this.checkUsable();
    const s = this.state.snapshot;
    return { meta: s.meta, size: s.size, checksum: s.checksum };
  }

  // --- Snapshot files and policy ----------------------------------------------------------------

  /** The sealed file of the current snapshot, or null for the empty snapshot of a new log. */
  currentSnapshot(): SnapshotFile | null {
    this.checkUsable();
    const s = this.state.snapshot;
    return s.file === null ? null : { meta: s.meta, file: s.file, size: s.size, checksum: s.checksum };
  }

  /** The path of the current snapshot file, for `SnapshotTarget.installSnapshotFile`. */
  currentSnapshotPath(): string | null {
    const snap = this.currentSnapshot();
    return snap === null ? null : this.snapshotFiles.path(snap.file);
  }

  /**
   * The path of the current snapshot file after reading it whole against its checksum, for installing
   * it into the state machine: opening the log checked only its size.
   */
  verifiedSnapshotPath(): string | null {
    const snap = this.currentSnapshot();
    if (snap === null) return null;
    this.snapshotFiles.verify(snap);
    return this.snapshotFiles.path(snap.file);
  }

  /** Streams the current snapshot; null when there is none yet. */
  async openSnapshotReader(): Promise<SnapshotReader | null> {
    const snap = this.currentSnapshot();
    return snap === null ? null : this.snapshotFiles.openReader(snap);
  }

  snapshotIndex(): number {
    this.checkUsable();
    return this.state.snapshot.meta.index;
  }

  snapshotBytes(): number {
    this.checkUsable();
    return this.state.snapshot.size;
  }

  /** Bytes (as `entrySize` counts them) of the retained entries in [lo, hi). */
  byteSize(lo: number, hi: number): number {
    this.checkUsable();
    checkInteger("lo", lo);
    checkInteger("hi", hi);
    if (lo < this.index.firstIndex || hi > this.index.lastIndex + 1) {
      throw new StorageArgumentError(
        `range [${lo}, ${hi}) is not within the retained log [${this.index.firstIndex}, ${this.index.lastIndex + 1})`,
      );
    }
    return this.index.bytes(lo, hi);
  }

  // --- Write side (driven by DurableLogWriter) --------------------------------------------------

  /** While a checkpoint's final pass runs, the promise to wait for before the next commit; else null. */
  writeGate(): Promise<void> | null {
    return this.gate;
  }

  /**
   * Applies `ops` in order, atomically, and returns per op the error that refused it (the op then
   * changed nothing) or null. Nothing is durable until `sync` resolves. Holds the event loop for the
   * journal's or the transaction's page-cache writes only.
   */
  commit(ops: readonly StoreOp[]): (Error | null)[] {
    this.checkUsable();
    if (this.journalable(ops)) return this.journalCommit(ops);
    this.absorb();
    const results: (Error | null)[] = [];
    const started = performance.now();
    let accepted = 0;
    this.lastInserted = null;
    this.stateRowDirty = false;
    try {
      this.db.transaction(() => {
        for (const op of ops) {
          const refused = this.refusal(op);
          results.push(refused);
          if (refused !== null) continue;
          this.apply(op);
          accepted++;
        }
        if (accepted > 0) {
          this.state = { ...this.state, seq: this.state.seq + 1 };
          const last = this.lastInserted;
          if (!this.stateRowDirty && last !== null && last.index === this.index.lastIndex) {
            this.db.recordBatchState(last, this.state);
          } else {
            this.db.writeState(this.state);
          }
        }
      });
    } catch (err) {
      throw this.fail(err);
    }
    if (accepted === 0) return results;
    this.databaseUnsynced = true;
    this.stats.commits++;
    this.stats.commitMicros.record(micros(started));
    this.walBytes += PAGES_PER_COMMIT_BYTES;
    this.options.faultHook?.("log-committed");
    this.maybeCheckpoint();
    return results;
  }

  /** Whether the group only appends and sets the hard state, in a record that fits the journal. */
  private journalable(ops: readonly StoreOp[]): boolean {
    const journaled: JournalOp[] = [];
    for (const op of ops) {
      if (op.kind !== "persist" || op.snapshot !== null) return false;
      journaled.push(op);
    }
    return this.journal.fits(journaled);
  }

  /** A group that only appends and sets the hard state: one journal record. */
  private journalCommit(ops: readonly StoreOp[]): (Error | null)[] {
    const results: (Error | null)[] = [];
    const started = performance.now();
    const journaled: AbsorbOp[] = [];
    for (const op of ops) {
      const refused = this.refusal(op);
      results.push(refused);
      if (refused !== null || op.kind !== "persist") continue;
      journaled.push(this.applyInMemory(op.entries, op.hardState));
    }
    if (journaled.length === 0) return results;
    // A database commit not yet fsynced (only a caller that skips `sync` leaves one): the journal's
    // chain cannot vouch across it, so make it durable and start a new chain.
    if (this.databaseUnsynced) this.syncDatabaseNow();
    this.state = { ...this.state, seq: this.state.seq + 1 };
    const seq = this.state.seq;
    let bytes: number;
    try {
      if (this.journal.switchDue()) this.switchJournal();
      bytes = this.journal.append({ seq, ops: journaled });
    } catch (err) {
      throw this.fail(err);
    }
    this.pending.push({ seq, ops: journaled, hardState: this.state.hardState, bytes });
    this.pendingBytes += bytes;
    this.stats.commits++;
    this.stats.commitMicros.record(micros(started));
    this.options.faultHook?.("log-committed");
    if (this.pendingBytes >= ABSORB_MAX_BYTES) this.absorb();
    else this.scheduleAbsorb();
    return results;
  }

  /**
   * Moves the journal to its other file: the database takes in every batch the file left behind
   * holds, and that file is free again once the database's WAL is fsynced, in the background.
   */
  private switchJournal(): void {
    this.absorb();
    // A failure stops the store; the file left behind is never free again.
    this.journal.switchFiles(this.syncWalInBackground());
  }

  /**
   * The database takes in the journaled batches, oldest first, in one transaction with no fsync: all
   * of them, or batches up to about `maxEntries` entries (at least one), the rest in the next turns.
   */
  private absorb(maxEntries = Number.POSITIVE_INFINITY): void {
    this.cancelAbsorb?.();
    this.cancelAbsorb = null;
    if (this.pending.length === 0) return;
    let taken = 0;
    let entries = 0;
    while (taken < this.pending.length && entries < maxEntries) {
      const b = this.pending[taken++]!;
      for (const op of b.ops) entries += op.entries.length;
      this.pendingBytes -= b.bytes;
    }
    const batches = this.pending.splice(0, taken);
    try {
      absorbInto(this.db, this.state, batches);
    } catch (err) {
      throw this.fail(err);
    }
    this.walBytes += PAGES_PER_COMMIT_BYTES;
    for (const b of batches)
      for (const op of b.ops) for (const e of op.entries) this.walBytes += entrySize(e);
    // A failure has stopped the store already.
    if (this.backgroundSyncs.size === 0) this.syncWalInBackground().catch(() => undefined);
    this.maybeCheckpoint();
    if (this.pending.length > 0) this.scheduleAbsorb(0);
  }

  /**
   * An fdatasync of the database's WAL on the thread pool, awaited by `close`; a failure stops the
   * store. After each absorb (unless one is still running), so that the pages reach the disk
   * steadily: left to the switch of journal files, megabytes went at once, and every voter's next
   * journal fsync on the shared disk waited behind them
   * (docs/decisions/0017-log-database-background-work.md).
   */
  private syncWalInBackground(): Promise<void> {
    const done = fdatasyncAsync(this.walFd).catch((err: unknown) => {
      throw this.fail(new StorageFailedError(`fsync of ${this.db.path}-wal failed`, { cause: err }));
    });
    const settled = done.catch(() => undefined);
    this.backgroundSyncs.add(settled);
    settled.finally(() => this.backgroundSyncs.delete(settled));
    return done;
  }

  private scheduleAbsorb(ms = this.options.absorbIntervalMs): void {
    if (this.cancelAbsorb !== null) return;
    const run = (): void => {
      this.cancelAbsorb = null;
      if (this.stopped !== null) return;
      // A checkpoint's final pass wants no new frames; it reschedules nothing, so try again shortly.
      if (this.gate !== null) {
        this.scheduleAbsorb();
        return;
      }
      try {
        this.absorb(ABSORB_STEP_ENTRIES);
      } catch {
        // The store is stopped now; its next call reports why.
      }
    };
    if (ms === 0) {
      const immediate = setImmediate(run);
      this.cancelAbsorb = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(run, ms).unref();
      this.cancelAbsorb = () => clearTimeout(timer);
    }
  }

  /**
   * Makes everything committed so far durable: one fdatasync of the journal (two just after it
   * switched files), or of the database's WAL after a commit carrying a snapshot, on the thread pool
   * or on the event loop (see setFsyncSite). Resolves only once the data is on stable storage.
   */
  async sync(): Promise<void> {
    this.checkUsable();
    if (this.syncing) await this.syncing.catch(() => undefined);
    this.checkUsable();
    const seq = this.state.seq;
    const lastIndex = this.index.lastIndex;
    const started = performance.now();
    try {
      this.syncing = this.syncFiles();
      await this.syncing;
    } catch (err) {
      throw this.fail(err);
    } finally {
      this.syncing = null;
    }
    const took = micros(started);
    this.stats.syncs++;
    this.stats.syncMicros.record(took);
    for (const listener of this.syncListeners) listener(took / 1e6);
    this.options.faultHook?.("log-synced");
    if (seq > this.ackedSeq) {
      this.ackedSeq = seq;
      this.pendingMark = { seq, lastIndex };
      this.markTimer ??= setImmediate(() => this.writeMark());
    }
    this.removeRetired(seq);
  }

  /**
   * Where the next `sync` calls run their fsyncs, for a caller whose best choice changes over time (a
   * voter's changes with its role); one already running finishes where it started.
   */
  setFsyncSite(site: FsyncSite): void {
    this.syncSite = site;
  }

  private async syncFiles(): Promise<void> {
    this.options.faultHook?.("log-fsync");
    await this.journal.sync(this.syncSite);
    if (!this.databaseUnsynced) return;
    if (this.syncSite === "event-loop") return this.syncDatabaseNow();
    try {
      await fdatasyncAsync(this.walFd);
    } catch (err) {
      throw new StorageFailedError(`fsync of ${this.db.path}-wal failed`, { cause: err });
    }
    this.databaseSynced();
  }

  private syncDatabaseNow(): void {
    try {
      fdatasyncSync(this.walFd);
    } catch (err) {
      throw this.fail(new StorageFailedError(`fsync of ${this.db.path}-wal failed`, { cause: err }));
    }
    this.databaseSynced();
  }

  /** Everything the journal holds was taken in before the database's commit: the database vouches for it now. */
  private databaseSynced(): void {
    this.databaseUnsynced = false;
    this.journal.releaseAll();
  }

  /**
   * Drops the entries up to and including `index`, which must not pass the snapshot; as
   * `MemoryStorage.compact`. Only the compaction point is written now; the rows are deleted in small
   * background steps. Needs no fsync: a compaction lost in a crash just leaves more log.
   */
  compact(index: number): void {
    this.checkUsable();
    checkInteger("index", index);
    const offset = this.index.startIndex;
    if (index <= offset) return;
    const snap = this.state.snapshot.meta.index;
    if (index > snap) throw new RaftInvariantError(`compaction to ${index} passes the snapshot at ${snap}`);
    const term = this.index.term(index);
    // The state row carries the batch state too: the database must hold every batch first.
    this.absorb();
    const next = { ...this.state, startIndex: index, startTerm: term };
    try {
      this.db.transaction(() => this.db.writeState(next));
    } catch (err) {
      throw this.fail(err);
    }
    this.state = next;
    this.index.compactTo(index);
    this.cache.dropTo(index);
    this.walBytes += PAGES_PER_COMMIT_BYTES;
    this.gcNext ??= offset + 1;
    this.scheduleGc();
  }

  /** The refusal `commit` would give a snapshot at (index, term) taken locally, or null. */
  localSnapshotRefusal(index: number, term: number): Error | null {
    this.checkUsable();
    const current = this.state.snapshot.meta.index;
    if (index <= current) return new SnapshotOutOfDateError(index, current);
    if (index > this.index.lastIndex) return new LogUnavailableError(index, this.index.lastIndex);
    const logTerm = this.index.term(index);
    if (term !== logTerm) {
      return new RaftInvariantError(
        `snapshot at ${index} has term ${term}, the log has term ${logTerm} there`,
      );
    }
    return null;
  }

  /** Deletes a sealed snapshot file a refused op carried, unless the log refers to it. */
  async discardSnapshotFile(snap: SnapshotFile): Promise<void> {
    if (snap.file !== this.state.snapshot.file) await this.snapshotFiles.remove(snap.file);
  }

  /** Closes the store: waits for a running fsync and checkpoint, then closes the files. */
  async close(): Promise<void> {
    if (this.stopped instanceof StorageClosedError) return;
    this.stopped = new StorageClosedError();
    if (this.gcTimer) clearTimeout(this.gcTimer);
    this.gcTimer = null;
    await this.syncing?.catch(() => undefined);
    try {
      this.absorb();
    } catch {
      // Failed: the journal still holds the batches, and the next open takes them in.
    }
    await Promise.all(this.backgroundSyncs);
    await this.checkpointing;
    await this.checkpointer.close();
    await this.cleanup;
    if (this.markTimer) clearImmediate(this.markTimer);
    this.writeMark();
    closeSync(this.walFd);
    this.journal.close();
    this.watermark.close();
    // The last connection to close folds the WAL into the database file and deletes it.
    this.db.close();
  }

  // --- Internals --------------------------------------------------------------------------------

  private readThrough(lo: number, hi: number, maxBytes: number): Entry[] {
    // A journaled batch may have left the cache before the database took it in.
    this.absorb();
    const cached = this.cache.firstIndex;
    const end = Math.min(hi, cached);
    let size = 0;
    let full = false;
    const out = this.db.readRange(lo, end, (e) => {
      const s = entrySize(e);
      if (size > 0 && size + s > maxBytes) {
        full = true;
        return false;
      }
      size += s;
      return true;
    });
    for (let i = 0; i < out.length; i++) {
      const e = out[i]!;
      if (e.index !== lo + i) {
        throw new StorageCorruptionError(this.db.path, lo + i, `entry ${lo + i} is missing`);
      }
      if (e.term !== this.index.term(e.index)) {
        throw new StorageCorruptionError(
          this.db.path,
          e.index,
          "entry term differs from the one recovered at open",
        );
      }
    }
    if (full) return out;
    if (out.length !== end - lo) {
      throw new StorageCorruptionError(this.db.path, lo + out.length, `entry ${lo + out.length} is missing`);
    }
    if (hi > cached) {
      for (const e of this.cache.slice(cached, hi)) {
        const s = entrySize(e);
        if (size + s > maxBytes) break;
        size += s;
        out.push(e);
      }
    }
    return out;
  }

  /** Why `op` cannot be applied to the log as it stands now (earlier ops of the group included). */
  private refusal(op: StoreOp): Error | null {
    const current = this.state.snapshot.meta.index;
    if (op.kind === "record-snapshot")
      return this.localSnapshotRefusal(op.snapshot.meta.index, op.snapshot.meta.term);
    const shape = checkWriteShape(op);
    if (shape !== null) return shape;
    let start = this.index.startIndex;
    let last = this.index.lastIndex;
    let snapIndex = current;
    let snapTerm = this.state.snapshot.meta.term;
    if (op.snapshot !== null) {
      const meta = op.snapshot.meta;
      if (meta.index <= current) return new SnapshotOutOfDateError(meta.index, current);
      start = last = snapIndex = meta.index;
      snapTerm = meta.term;
    }
    const entries = op.entries;
    if (entries.length > 0) {
      const first = entries[0]!.index;
      if (first > last + 1) {
        return new RaftInvariantError(`append at ${first} leaves a gap after last index ${last}`);
      }
      const skip = Math.max(0, start + 1 - first);
      if (skip < entries.length) {
        const from = first + skip;
        const floor = Math.max(this.state.hardState.commit, snapIndex);
        if (from <= last && from <= floor) {
          return new RaftInvariantError(`append at ${from} would replace committed entries (up to ${floor})`);
        }
        const prevTerm =
          from - 1 === snapIndex && op.snapshot !== null ? snapTerm : this.index.term(from - 1);
        const firstTerm = entries[skip]!.term;
        if (firstTerm < prevTerm) {
          return new RaftInvariantError(
            `entry ${from} has term ${firstTerm}, below term ${prevTerm} before it`,
          );
        }
        last = entries[entries.length - 1]!.index;
      }
    }
    const hs = op.hardState;
    const prev = this.state.hardState;
    const commit = (hs ?? prev).commit;
    if (commit > last) {
      return new RaftInvariantError(`hard state commit ${commit} is beyond the last index ${last}`);
    }
    if (hs !== null) {
      if (hs.term < prev.term) {
        return new RaftInvariantError(`hard state term ${hs.term} is below the stored term ${prev.term}`);
      }
      if (hs.term === prev.term && prev.vote !== null && hs.vote !== prev.vote) {
        return new RaftInvariantError(
          `hard state changes the vote of term ${hs.term} from ${prev.vote} to ${String(hs.vote)}`,
        );
      }
    }
    return null;
  }

  private apply(op: StoreOp): void {
    if (op.kind === "record-snapshot") {
      this.retire(this.state.snapshot.file);
      this.state = { ...this.state, snapshot: op.snapshot };
      this.stateRowDirty = true;
      return;
    }
    const snap = op.snapshot;
    if (snap !== null) {
      const { index, term } = snap.meta;
      // The uncommitted tail beyond the snapshot goes now; rows it covers are left to the background.
      this.db.deleteFrom(index + 1);
      if (this.index.lastIndex > this.index.startIndex) this.gcNext ??= this.index.startIndex + 1;
      this.retire(this.state.snapshot.file);
      this.state = { ...this.state, startIndex: index, startTerm: term, snapshot: snap };
      this.index.reset(index, term);
      this.cache.reset(index + 1);
      this.stateRowDirty = true;
      this.scheduleGc();
    }
    const { entries, truncates } = this.applyInMemory(op.entries, op.hardState);
    const first = entries[0];
    if (first === undefined) return;
    if (truncates) this.db.deleteFrom(first.index);
    for (const e of entries) {
      this.db.insert(e);
      this.walBytes += entrySize(e);
    }
    this.lastInserted = entries[entries.length - 1]!;
  }

  /** The index, cache and hard state take an op's entries and hard state; returns the op as the log keeps it. */
  private applyInMemory(entries: readonly Entry[], hardState: HardState | null): AbsorbOp {
    const { kept, truncates } = appendInMemory(this.index, this.cache, entries);
    if (hardState !== null) this.state = { ...this.state, hardState };
    return { entries: kept, hardState, truncates };
  }

  /** Schedules the deletion of a superseded snapshot file once the commit now running is durable. */
  private retire(file: string | null): void {
    if (file !== null) this.retired.push({ file, seq: this.state.seq + 1 });
  }

  private writeMark(): void {
    this.markTimer = null;
    const mark = this.pendingMark;
    if (mark === null) return;
    this.pendingMark = null;
    try {
      this.watermark.write(mark);
    } catch (err) {
      // As a failed fsync would: nothing later may be acknowledged, the node must restart.
      this.fail(new StorageFailedError(`writing ${this.watermark.path} failed`, { cause: err }));
    }
  }

  private removeRetired(syncedSeq: number): void {
    const due = this.retired.filter((r) => r.seq <= syncedSeq);
    if (due.length === 0) return;
    this.retired = this.retired.filter((r) => r.seq > syncedSeq);
    // A file that fails to go is only unreferenced garbage: the next open deletes it.
    this.cleanup = this.cleanup.then(() =>
      Promise.all(due.map((r) => this.snapshotFiles.remove(r.file).catch(() => undefined))).then(
        () => undefined,
      ),
    );
  }

  /**
   * A checkpoint lets SQLite restart the WAL from its beginning only if, when the next write starts,
   * every frame has been copied back; under steady appends a checkpoint running alongside them never
   * catches up and the WAL would grow forever. So it runs in two passes: the bulk alongside the writes,
   * then the few frames committed meanwhile with commits held back (`writeGate`). Writes then wait for
   * one short checkpoint (about two fsyncs) per cycle, on the worker thread: the event loop runs on.
   */
  private maybeCheckpoint(): void {
    if (this.walBytes < this.options.checkpointBytes || this.checkpointing) return;
    this.checkpointing = this.checkpoint(this.walBytes);
  }

  private async checkpoint(counted: number): Promise<void> {
    try {
      await this.checkpointer.checkpoint();
      let open = (): void => undefined;
      this.gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      let final: CheckpointResult;
      try {
        final = await this.checkpointer.checkpoint();
      } finally {
        this.gate = null;
        open();
      }
      // Only a checkpoint that copied every frame lets SQLite restart the WAL; otherwise keep
      // counting, so the next cycle comes as soon as the next commit.
      if (final.checkpointed === final.log) this.walBytes -= counted;
      this.stats.checkpoints++;
    } catch (err) {
      this.fail(err);
    } finally {
      this.checkpointing = null;
      this.scheduleGc();
    }
  }

  private scheduleGc(): void {
    // While commits are held for a checkpoint, deletions wait too; the checkpoint reschedules them.
    if (this.gcTimer !== null || this.gcNext === null || this.stopped !== null || this.gate !== null) return;
    this.gcTimer = setTimeout(() => {
      this.gcTimer = null;
      this.gcStep();
    }, this.options.gcStepIntervalMs);
    this.gcTimer.unref();
  }

  private gcStep(): void {
    const from = this.gcNext;
    if (from === null || this.stopped !== null || this.gate !== null) return;
    const to = Math.min(from + this.options.gcStepEntries, this.index.startIndex + 1);
    try {
      this.db.transaction(() => this.db.deleteRange(from, to));
    } catch (err) {
      this.fail(err);
      return;
    }
    this.walBytes += PAGES_PER_COMMIT_BYTES;
    this.gcNext = to > this.index.startIndex ? null : to;
    this.scheduleGc();
  }

  /**
   * Calls `listener` once, when an I/O failure stops the store (never for `close`): failures of the
   * background work (absorbs, checkpoints, the WAL's fsyncs, the watermark) surface at once rather
   * than at the caller's next write.
   */
  onFailure(listener: (err: StorageError) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * Calls `listener` after every successful `sync` with the seconds its fsyncs took (on the thread
   * pool, with the hand-offs there and back), which every write acknowledged pays for durability.
   * For metrics, which the storage itself knows nothing of.
   */
  onSynced(listener: (seconds: number) => void): void {
    this.syncListeners.push(listener);
  }

  private checkUsable(): void {
    if (this.stopped !== null) throw this.stopped;
  }

  /** Stops the store for good after an I/O failure (fail-stop); returns the error to throw. */
  private fail(err: unknown): StorageError {
    if (this.stopped === null) {
      const failure =
        err instanceof StorageError
          ? err
          : new StorageFailedError(`${this.db.path}: ${String(err)}`, { cause: err });
      this.stopped = failure;
      for (const listener of this.failureListeners) listener(failure);
    }
    return this.stopped;
  }
}

/**
 * Appends `entries` to the index and cache, replacing any from the first one's index on; entries at or
 * below the compaction point are skipped. Returns the entries kept, and whether they replaced some.
 */
function appendInMemory(
  index: LogIndex,
  cache: EntryCache,
  entries: readonly Entry[],
): { kept: readonly Entry[]; truncates: boolean } {
  const skip = Math.max(0, index.startIndex + 1 - (entries[0]?.index ?? 0));
  if (skip >= entries.length) return { kept: [], truncates: false };
  const kept = skip === 0 ? entries : entries.slice(skip);
  const from = kept[0]!.index;
  const truncates = from <= index.lastIndex;
  if (truncates) {
    index.truncateFrom(from);
    cache.truncateFrom(from);
  }
  for (const e of kept) {
    index.append(e);
    cache.append(e);
  }
  return { kept, truncates };
}

/**
 * Writes journaled batches into the database in one transaction (no fsync), with the batch state of
 * the last one; `current` gives the state row's other fields.
 */
function absorbInto(db: LogDatabase, current: LogState, batches: readonly PendingBatch[]): void {
  const last = batches[batches.length - 1]!;
  const batch: BatchState = { seq: last.seq, hardState: last.hardState };
  db.transaction(() => {
    let newest: Entry | null = null;
    for (const b of batches) {
      for (const op of b.ops) {
        const first = op.entries[0];
        if (first === undefined) continue;
        if (op.truncates) db.deleteFrom(first.index);
        for (const e of op.entries) db.insert(e);
        newest = op.entries[op.entries.length - 1]!;
      }
    }
    // The newest row: the batch state rides on the page being written anyway.
    if (newest !== null) db.recordBatchState(newest, batch);
    else db.writeState({ ...current, ...batch });
  });
}

/**
 * Takes in the journaled batches after those the database holds, checked as the recovery scan checks
 * rows (no gap, no term going back), and returns the batch state they leave.
 */
function replay(
  db: LogDatabase,
  state: LogState,
  index: LogIndex,
  cache: EntryCache,
  journal: LogJournal,
): BatchState {
  const batches = journal.batchesAfter(state.seq);
  if (batches.length === 0) return state;
  let hardState = state.hardState;
  const taken: PendingBatch[] = [];
  for (const b of batches) {
    const ops: AbsorbOp[] = [];
    for (const op of b.ops) {
      const first = op.entries[0];
      if (first !== undefined) {
        if (first.index > index.lastIndex + 1) {
          throw new StorageCorruptionError(journal.path, first.index, `journal batch ${b.seq} leaves a gap`);
        }
        let prevTerm = first.index - 1 >= index.startIndex ? index.term(first.index - 1) : 0;
        for (const e of op.entries) {
          if (e.term < prevTerm) {
            throw new StorageCorruptionError(
              journal.path,
              e.index,
              `term ${e.term} follows term ${prevTerm}`,
            );
          }
          prevTerm = e.term;
        }
      }
      const { kept, truncates } = appendInMemory(index, cache, op.entries);
      ops.push({ entries: kept, hardState: op.hardState, truncates });
      if (op.hardState !== null) hardState = op.hardState;
    }
    taken.push({ seq: b.seq, ops, hardState, bytes: 0 });
  }
  absorbInto(db, state, taken);
  return { seq: taken[taken.length - 1]!.seq, hardState };
}

/**
 * The recovery scan: every retained entry verified, contiguous, with non-decreasing terms; and the
 * current batch state, the one with the highest sequence number among the state row and the rows.
 */
function recover(
  db: LogDatabase,
  state: LogState,
  cacheEntries: number,
  cacheBytes: number,
): { index: LogIndex; cache: EntryCache; batch: BatchState } {
  const index = new LogIndex(state.startIndex, state.startTerm);
  const cache = new EntryCache(cacheEntries, cacheBytes, state.startIndex + 1);
  let batch: BatchState = state;
  let expected = state.startIndex + 1;
  let prevTerm = state.startTerm;
  for (const { entry: e, batch: recorded } of db.scanAfter(state.startIndex)) {
    if (e.index !== expected) {
      throw new StorageCorruptionError(
        db.path,
        expected,
        `entry ${expected} is missing (the next stored is ${e.index})`,
      );
    }
    if (e.term < prevTerm) {
      throw new StorageCorruptionError(db.path, e.index, `term ${e.term} follows term ${prevTerm}`);
    }
    if (recorded !== null && recorded.seq > batch.seq) batch = recorded;
    index.append(e);
    cache.append(e);
    prevTerm = e.term;
    expected++;
  }
  return { index, cache, batch };
}

/** The snapshot must stand where the log says and its file must be there with its recorded size. */
function checkSnapshot(logPath: string, state: LogState, index: LogIndex, files: SnapshotFileStore): void {
  const s = state.snapshot;
  const { index: at, term } = s.meta;
  if (at < state.startIndex || at > index.lastIndex) {
    throw new StorageCorruptionError(
      logPath,
      at,
      `the snapshot at ${at} lies outside the log [${state.startIndex}, ${index.lastIndex}]`,
    );
  }
  if (index.term(at) !== term) {
    throw new StorageCorruptionError(logPath, at, `the snapshot has term ${term}, the log ${index.term(at)}`);
  }
  if (s.file === null) {
    if (at !== 0) throw new StorageCorruptionError(logPath, at, "the snapshot has no file");
    return;
  }
  files.check({ meta: s.meta, file: s.file, size: s.size, checksum: s.checksum });
}

/** Whole microseconds since `started` (a performance.now() reading), at least 1 as histograms require. */
function micros(started: number): number {
  return Math.max(1, Math.round((performance.now() - started) * 1000));
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

function checkInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value))
    throw new StorageArgumentError(`${name} must be an integer, got ${value}`);
}
