import { closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";
import { fsyncPath } from "../fs/fsync.js";
import { makePrivateDir } from "../fs/private-dir.js";
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import { WalCheckpointer } from "../fs/wal-checkpointer.js";
import type { ConfState } from "../raft/types.js";
import { AckWatermark } from "./ack-watermark.js";
import type { ResolvedOptions } from "./durable-log-options.js";
import { EntryCache } from "./entry-cache.js";
import { appendInMemory } from "./in-memory-append.js";
import { type AbsorbOp, absorbInto, type PendingBatch } from "./journal-absorber.js";
import { type BatchState, LogDatabase, type LogState } from "./log-database.js";
import { LogIndex } from "./log-index.js";
import { LogJournal } from "./log-journal.js";
import { SnapshotFileStore } from "./snapshot-file-store.js";
import { StorageCorruptionError } from "./storage-errors.js";

/** The files of a data directory. */
export const LOG_FILE = "raft-log.sqlite";
export const WATERMARK_FILE = "raft-log.ack";
export const SNAPSHOT_DIR = "snapshots";

/** Everything a recovered data directory holds open, for the store to take over. */
export interface RecoveredLog {
  readonly db: LogDatabase;
  readonly state: LogState;
  readonly index: LogIndex;
  readonly cache: EntryCache;
  readonly snapshotFiles: SnapshotFileStore;
  /** The database's WAL, open for its fdatasyncs. */
  readonly walFd: number;
  readonly journal: LogJournal;
  readonly watermark: AckWatermark;
  readonly checkpointer: WalCheckpointer;
  /** The lowest row stored below the compaction point, or null when none is. */
  readonly gcNext: number | null;
}

/**
 * Opens the data directory `dir`, creating it when new, and recovers exactly what was durable: every
 * entry checksum-verified, the indexes checked contiguous and the terms non-decreasing, the journal's
 * batches taken in, and the whole compared with the acknowledgement watermark. Then folds the WAL into
 * the database, restarts the journal and hands what it opened to `build`; if anything throws before
 * `build` returns, every file opened is closed again. Any damage throws StorageCorruptionError naming
 * the file and the index.
 */
export function recoverLog<T>(
  dir: string,
  conf: ConfState,
  sqlite: SqliteLimits,
  opts: ResolvedOptions,
  build: (log: RecoveredLog) => T,
): T {
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
  const db = LogDatabase.open(logPath, conf, sqlite);
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
    const lowest = db.minIndex();
    // Fold the WAL into the database now (fsynced): recovery is done, the next open scans one file,
    // and the journal may start over.
    db.checkpointAndTruncate();
    // Only now is the state that superseded them durable: a commit read from the WAL may still be only
    // in the page cache (the last run died in its fdatasync), and a power loss would bring back a state
    // that refers to a file deleted here.
    snapshotFiles.removeAllBut(state.snapshot.file);
    journal.restart();
    walFd = openSync(walPath, "r+");
    fsyncPath(dir);
    const watermark = AckWatermark.open(ackPath, { seq: state.seq, lastIndex: index.lastIndex });
    return build({
      db,
      state,
      index,
      cache,
      snapshotFiles,
      walFd,
      journal,
      watermark,
      checkpointer: new WalCheckpointer(logPath),
      gcNext: lowest !== null && lowest <= state.startIndex ? lowest : null,
    });
  } catch (err) {
    if (walFd !== null) closeSync(walFd);
    journal?.close();
    db.close();
    throw err;
  }
}

/**
 * Takes in the journaled batches after those the database holds, checked as the recovery scan checks
 * rows (no gap, no term going back), and returns the batch state they leave.
 */
export function replay(
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
export function recover(
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

/** The snapshot must stand where the log says and its file, if it has one, be there with its recorded size. */
export function checkSnapshot(
  logPath: string,
  state: LogState,
  index: LogIndex,
  files: SnapshotFileStore,
): void {
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
  // No file: the empty snapshot of a new log, or a snapshot point where the state database itself is
  // durable, which the voter checks against the state at start.
  if (s.file === null) return;
  files.check({ meta: s.meta, file: s.file, size: s.size, checksum: s.checksum });
}
