import { closeSync, fdatasync, fdatasyncSync, fstatSync } from "node:fs";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { promisify } from "node:util";
import type { FsyncSite } from "../fs/fsync.js";
import { DEFAULT_STORAGE_LIMITS, walFrameBytes } from "../fs/sqlite-limits.js";
import type { CheckpointResult, WalCheckpointer } from "../fs/wal-checkpointer.js";
import { WalGrowth } from "../fs/wal-growth.js";
import { LogCompactedError, LogUnavailableError, RaftInvariantError } from "../raft/errors.js";
import { entrySize, limitSize } from "../raft/log-storage.js";
import type { ConfState, Entry, HardState, Snapshot } from "../raft/types.js";
import type { AckWatermark, Watermark } from "./ack-watermark.js";
import {
  checkInteger,
  type DurableLogStoreOptions,
  type ResolvedOptions,
  resolveOptions,
} from "./durable-log-options.js";
import type { EntryCache } from "./entry-cache.js";
import { appendInMemory } from "./in-memory-append.js";
import { type AbsorbOp, JournalAbsorber, type PendingBatch } from "./journal-absorber.js";
import { LogCompaction } from "./log-compaction.js";
import type { LogDatabase, LogState, SnapshotRecord } from "./log-database.js";
import type { LogIndex } from "./log-index.js";
import type { JournalOp, LogJournal } from "./log-journal.js";
import { recoverLog } from "./log-recovery.js";
import { localSnapshotRefusal, type RefusalView, storeOpRefusal } from "./log-refusals.js";
import type { LogStore } from "./log-store.js";
import type { SnapshotFile, SnapshotFileStore } from "./snapshot-file-store.js";
import type { SnapshotReader } from "./snapshot-reader.js";
import {
  StorageArgumentError,
  StorageClosedError,
  StorageCorruptionError,
  StorageError,
  StorageFailedError,
} from "./storage-errors.js";

/**
 * WAL bytes a commit adds beyond its entries, for the checkpoint estimate: a commit rewrites at least
 * the leaf it appends to, often an interior page or the state row's page too.
 */
function commitOverheadBytes(pageBytes: number): number {
  return 2 * walFrameBytes(pageBytes);
}

/** One unit of the write side, applied in order within a group commit. */
export type StoreOp =
  /** What one Ready asks to persist; its snapshot (if any) is already a sealed file. */
  | {
      readonly kind: "persist";
      readonly snapshot: SnapshotFile | null;
      readonly entries: readonly Entry[];
      readonly hardState: HardState | null;
    }
  /**
   * A snapshot of the local state machine, at an index the log still holds: a sealed copy, or a
   * snapshot point with no file (`file` null) where the state database itself is durable
   * (docs/decisions/0021-lazy-snapshots.md).
   */
  | { readonly kind: "record-snapshot"; readonly snapshot: SnapshotRecord };

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
export class DurableLogStore implements LogStore {
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
  /** The core asked for a snapshot while the log stood on a point with no file (snapshotWanted). */
  private wanted = false;
  /** The log as the refusal rules read it (log-refusals.ts). */
  private readonly refusalView: RefusalView;
  /** Superseded snapshot files, deletable once the commit `seq` that superseded them is durable. */
  private retired: { file: string; seq: number }[] = [];
  private cleanup: Promise<void> = Promise.resolve();
  private walBytes = 0;
  /** WAL bytes a commit adds beyond its entries (commitOverheadBytes). */
  private readonly commitOverhead: number;
  /**
   * Starts a cycle when the WAL file grew past `checkpointBytes`, whatever `walBytes` says: the WAL
   * holds more than was counted, or a checkpoint's restart did not happen.
   */
  private readonly walGrowth: WalGrowth;
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
  /** Deletes the rows below the compaction point in background steps. */
  private readonly compaction: LogCompaction;
  /** Takes journaled batches into the database. */
  private readonly absorber: JournalAbsorber;
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
    this.commitOverhead = commitOverheadBytes(db.pageBytes());
    this.walGrowth = new WalGrowth(() => fstatSync(walFd).size, options.checkpointBytes);
    this.syncSite = options.fsync;
    this.absorber = new JournalAbsorber(db, options.absorbIntervalMs, {
      state: () => this.state,
      absorbed: (batches) => this.absorbed(batches),
      fail: (err) => this.fail(err),
      stopped: () => this.stopped !== null,
      gated: () => this.gate !== null,
    });
    this.compaction = new LogCompaction(db, index, options.gcStepEntries, options.gcStepIntervalMs, gcNext, {
      held: () => this.stopped !== null || this.gate !== null,
      // A step's deletes go to the WAL like an append's rows: its growth is checked after each step
      // as after each absorb, or compaction alone (nothing appended) would grow it unchecked.
      deleted: () => {
        this.walBytes += this.commitOverhead;
        this.maybeCheckpoint();
      },
      fail: (err) => {
        this.fail(err);
      },
    });
    this.compaction.schedule();
    const store = this;
    this.refusalView = {
      get snapshot() {
        return store.state.snapshot;
      },
      get hardState() {
        return store.state.hardState;
      },
      get startIndex() {
        return store.index.startIndex;
      },
      get lastIndex() {
        return store.index.lastIndex;
      },
      term: (i) => store.index.term(i),
    };
  }

  /**
   * Opens the data directory `dir`, creating it when new, and returns exactly what was durable:
   * every entry is checksum-verified, the indexes checked contiguous and the terms non-decreasing,
   * and the database compared with the acknowledgement watermark. Any damage throws
   * StorageCorruptionError naming the file and the index.
   */
  static open(dir: string, options: DurableLogStoreOptions): DurableLogStore {
    const sqlite = options.sqlite ?? DEFAULT_STORAGE_LIMITS.log;
    const opts = resolveOptions(options, sqlite);
    return recoverLog(
      dir,
      options.conf,
      sqlite,
      opts,
      (log) =>
        new DurableLogStore(
          dir,
          log.db,
          log.state,
          log.index,
          log.cache,
          log.snapshotFiles,
          log.walFd,
          log.journal,
          log.watermark,
          log.checkpointer,
          opts,
          log.gcNext,
        ),
    );
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
   * streams from the file with `openSnapshotReader`. Null at a snapshot point with no file yet: the
   * call marks one as wanted (`snapshotWanted`), and the leader asks again later.
   */
  snapshot(): Snapshot | null {
    this.checkUsable();
    const s = this.state.snapshot;
    if (s.file === null && s.meta.index > 0) {
      this.wanted = true;
      return null;
    }
    return { meta: s.meta, size: s.size, checksum: s.checksum };
  }

  /**
   * Whether the core asked for a snapshot to send while the log stood on a point with no file: the
   * driver then copies the state (`DurableLogWriter.createSnapshot`), which clears it.
   */
  snapshotWanted(): boolean {
    return this.wanted && this.state.snapshot.file === null && this.state.snapshot.meta.index > 0;
  }

  // --- Snapshot files and policy ----------------------------------------------------------------

  /**
   * The sealed file of the current snapshot, or null for the empty snapshot of a new log and for a
   * snapshot point with no file.
   */
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
    this.absorber.absorb();
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
    this.walBytes += this.commitOverhead;
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
    this.absorber.add({ seq, ops: journaled, hardState: this.state.hardState, bytes });
    this.stats.commits++;
    this.stats.commitMicros.record(micros(started));
    this.options.faultHook?.("log-committed");
    this.absorber.absorbSoon();
    return results;
  }

  /**
   * Moves the journal to its other file: the database takes in every batch the file left behind
   * holds, and that file is free again once the database's WAL is fsynced, in the background.
   */
  private switchJournal(): void {
    this.absorber.absorb();
    // A failure stops the store; the file left behind is never free again.
    this.journal.switchFiles(this.syncWalInBackground());
  }

  /** After the database took `batches` in: counts their WAL bytes, fsyncs the WAL in the background. */
  private absorbed(batches: readonly PendingBatch[]): void {
    this.walBytes += this.commitOverhead;
    for (const b of batches)
      for (const op of b.ops) for (const e of op.entries) this.walBytes += entrySize(e);
    // A failure has stopped the store already.
    if (this.backgroundSyncs.size === 0) this.syncWalInBackground().catch(() => undefined);
    this.maybeCheckpoint();
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
    this.absorber.absorb();
    const next = { ...this.state, startIndex: index, startTerm: term };
    try {
      this.db.transaction(() => this.db.writeState(next));
    } catch (err) {
      throw this.fail(err);
    }
    this.state = next;
    this.index.compactTo(index);
    this.cache.dropTo(index);
    this.walBytes += this.commitOverhead;
    this.compaction.markFrom(offset + 1);
    this.compaction.schedule();
  }

  /** The refusal `commit` would give a snapshot at (index, term) taken locally, or null. */
  localSnapshotRefusal(index: number, term: number, withFile: boolean): Error | null {
    this.checkUsable();
    return localSnapshotRefusal(this.refusalView, index, term, withFile);
  }

  /**
   * Deletes a sealed snapshot file a refused op carried, unless the log refers to it. Never fails: a
   * file that fails to go is only unreferenced garbage, which the next open deletes.
   */
  async discardSnapshotFile(snap: SnapshotFile | SnapshotRecord): Promise<void> {
    if (snap.file !== null && snap.file !== this.state.snapshot.file)
      await this.snapshotFiles.remove(snap.file).catch(() => undefined);
  }

  /** Closes the store: waits for a running fsync and checkpoint, then closes the files. */
  async close(): Promise<void> {
    if (this.stopped instanceof StorageClosedError) return;
    this.stopped = new StorageClosedError();
    this.compaction.stop();
    await this.syncing?.catch(() => undefined);
    try {
      this.absorber.absorb();
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
    this.absorber.absorb();
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
    return storeOpRefusal(this.refusalView, op);
  }

  private apply(op: StoreOp): void {
    if (op.kind === "record-snapshot") {
      this.retire(this.state.snapshot.file);
      this.state = { ...this.state, snapshot: op.snapshot };
      if (op.snapshot.file !== null) this.wanted = false;
      this.stateRowDirty = true;
      return;
    }
    const snap = op.snapshot;
    if (snap !== null) {
      const { index, term } = snap.meta;
      // The uncommitted tail beyond the snapshot goes now; rows it covers are left to the background.
      this.db.deleteFrom(index + 1);
      if (this.index.lastIndex > this.index.startIndex) this.compaction.markFrom(this.index.startIndex + 1);
      this.retire(this.state.snapshot.file);
      this.state = { ...this.state, startIndex: index, startTerm: term, snapshot: snap };
      // A snapshot from the leader answers the core's request as a copy would.
      this.wanted = false;
      this.index.reset(index, term);
      this.cache.reset(index + 1);
      this.stateRowDirty = true;
      this.compaction.schedule();
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
    // Sized at every call, so that growth is always that of the commits since the last one.
    const outgrown = this.walGrowth.outgrown();
    if (this.checkpointing) return;
    if (this.walBytes < this.options.checkpointBytes && !outgrown) return;
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
      this.compaction.schedule();
    }
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

/** Whole microseconds since `started` (a performance.now() reading), at least 1 as histograms require. */
function micros(started: number): number {
  return Math.max(1, Math.round((performance.now() - started) * 1000));
}
