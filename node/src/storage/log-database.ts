import Database from "better-sqlite3";
import { crc32c } from "../checksum/crc32c.js";
import { applySqliteLimits, pageBytesOf, type SqliteLimits } from "../fs/sqlite-limits.js";
import { checksumOfEntry, entryChecksum } from "../raft/entry-checksum.js";
import { entryTypeCode, entryTypeOf } from "../raft/entry-type.js";
import type { ConfState, Entry, HardState, SnapshotMeta } from "../raft/types.js";
import {
  StorageCorruptionError,
  StorageError,
  StorageFailedError,
  StorageFormatError,
} from "./storage-errors.js";

/** "KLOG" in the SQLite header: tells our log apart from any other SQLite file at open. */
const APPLICATION_ID = 0x4b4c_4f47;
const FORMAT_VERSION = 1;

const SCHEMA = `
CREATE TABLE entries (
  idx INTEGER PRIMARY KEY,
  term INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  data BLOB NOT NULL,
  crc INTEGER NOT NULL,
  seq INTEGER,
  hs_term INTEGER,
  hs_vote TEXT,
  hs_commit INTEGER
) STRICT;
CREATE TABLE state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL,
  hs_term INTEGER NOT NULL,
  hs_vote TEXT,
  hs_commit INTEGER NOT NULL,
  start_index INTEGER NOT NULL,
  start_term INTEGER NOT NULL,
  snap_index INTEGER NOT NULL,
  snap_term INTEGER NOT NULL,
  snap_conf TEXT NOT NULL,
  snap_file TEXT,
  snap_size INTEGER NOT NULL,
  snap_crc INTEGER NOT NULL,
  crc INTEGER NOT NULL
) STRICT;
`;

/**
 * The page size of a log database this build creates. SQLite keeps a database's page size for good, so
 * one created with 4 KiB pages keeps them. Entries are appended in order and read in runs, so a large
 * page costs little: small entries share it. A 64 KiB entry spans three pages here, where 4 KiB pages
 * made it a chain of seventeen. SQLite pays per page to write it to the WAL (a header and a page,
 * two writes), to copy it at the checkpoint, and to free it when compaction deletes the entry
 * (docs/decisions/0032-large-log-pages.md).
 */
export const LOG_PAGE_BYTES = 32 * 1024;

/** The snapshot the log stands on: its metadata and the file holding it (none for the empty one). */
export interface SnapshotRecord {
  readonly meta: SnapshotMeta;
  /**
   * The file's name in the snapshot directory; null for the initial empty snapshot at index 0 and for
   * a snapshot point, where the state database is durable at `meta.index` and a file is made only
   * when a follower needs one.
   */
  readonly file: string | null;
  readonly size: number;
  readonly checksum: number;
}

/** A write batch's sequence number and the hard state it left. */
export interface BatchState {
  /** Incremented by every committed write batch; compared with the acknowledgement watermark at open. */
  readonly seq: number;
  readonly hardState: HardState;
}

/**
 * Everything about the log but its entries, kept in one checksummed row. A batch that ends by
 * appending entries records its BatchState on its last entry's row instead (see `recordBatchState`),
 * so the common write touches only the page it appends to; the row with the highest `seq` is current.
 */
export interface LogState extends BatchState {
  /** The compaction point: entries after it are retained, its own term is still answered. */
  readonly startIndex: number;
  readonly startTerm: number;
  readonly snapshot: SnapshotRecord;
}

type StateRow = [
  seq: number,
  hsTerm: number,
  hsVote: string | null,
  hsCommit: number,
  startIndex: number,
  startTerm: number,
  snapIndex: number,
  snapTerm: number,
  snapConf: string,
  snapFile: string | null,
  snapSize: number,
  snapCrc: number,
];

type EntryRow = [
  idx: number,
  term: number,
  kind: number,
  data: Buffer,
  crc: number,
  seq: number | null,
  hsTerm: number | null,
  hsVote: string | null,
  hsCommit: number | null,
];

const ENTRY_COLUMNS = "idx, term, kind, data, crc, seq, hs_term, hs_vote, hs_commit";

/** An entry read back, with the batch state recorded on its row, if any. */
export interface StoredEntry {
  readonly entry: Entry;
  readonly batch: BatchState | null;
}

const encoder = new TextEncoder();

function stateToRow(s: LogState): StateRow {
  const snap = s.snapshot;
  return [
    s.seq,
    s.hardState.term,
    s.hardState.vote,
    s.hardState.commit,
    s.startIndex,
    s.startTerm,
    snap.meta.index,
    snap.meta.term,
    JSON.stringify(snap.meta.conf),
    snap.file,
    snap.size,
    snap.checksum,
  ];
}

function initialState(conf: ConfState): LogState {
  return {
    seq: 0,
    hardState: { term: 0, vote: null, commit: 0 },
    startIndex: 0,
    startTerm: 0,
    snapshot: { meta: { index: 0, term: 0, conf }, file: null, size: 0, checksum: 0 },
  };
}

function rowChecksum(row: readonly unknown[]): number {
  return crc32c(encoder.encode(JSON.stringify(row)));
}

/**
 * An entry row's checksum: the entry's own, extended over the batch state the row carries. `crc` is
 * the entry's own checksum: as it arrived with the entry when writing (checksumOfEntry), computed from
 * the row when reading.
 */
function entryRowChecksum(crc: number, batch: BatchState | null): number {
  if (batch === null) return crc;
  const hs = batch.hardState;
  return crc32c(encoder.encode(JSON.stringify([batch.seq, hs.term, hs.vote, hs.commit])), crc);
}

/**
 * The Raft log's SQLite database: schema, pragmas and the statements the store runs, with every row
 * checked against its checksum as it is read. Errors SQLite raises are translated into the storage's
 * typed errors, naming the file.
 */
export class LogDatabase {
  private readonly insertEntry: Database.Statement<[number, number, number, Uint8Array, number]>;
  private readonly recordBatchStmt: Database.Statement<
    [number, number, string | null, number, number, number]
  >;
  private readonly deleteFromStmt: Database.Statement<[number]>;
  private readonly deleteRangeStmt: Database.Statement<[number, number]>;
  private readonly selectRange: Database.Statement<[number, number], EntryRow>;
  private readonly selectAfter: Database.Statement<[number], EntryRow>;
  private readonly selectMin: Database.Statement<[], number | null>;
  private readonly writeStateStmt: Database.Statement<[...StateRow, number]>;
  private readonly readStateStmt: Database.Statement<[], [...StateRow, number]>;
  /** One transaction wrapper for every call, rather than better-sqlite3 building one per call. */
  private readonly runInTransaction: (fn: () => unknown) => unknown;

  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {
    this.runInTransaction = db.transaction((fn: () => unknown) => fn());
    this.insertEntry = db.prepare("INSERT INTO entries (idx, term, kind, data, crc) VALUES (?, ?, ?, ?, ?)");
    this.recordBatchStmt = db.prepare(
      "UPDATE entries SET seq = ?, hs_term = ?, hs_vote = ?, hs_commit = ?, crc = ? WHERE idx = ?",
    );
    this.deleteFromStmt = db.prepare("DELETE FROM entries WHERE idx >= ?");
    this.deleteRangeStmt = db.prepare("DELETE FROM entries WHERE idx >= ? AND idx < ?");
    this.selectRange = db
      .prepare<[number, number], EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM entries WHERE idx >= ? AND idx < ? ORDER BY idx`,
      )
      .raw();
    this.selectAfter = db
      .prepare<[number], EntryRow>(`SELECT ${ENTRY_COLUMNS} FROM entries WHERE idx > ? ORDER BY idx`)
      .raw();
    this.selectMin = db.prepare<[], number | null>("SELECT min(idx) FROM entries").pluck();
    this.writeStateStmt = db.prepare(
      `UPDATE state SET seq = ?, hs_term = ?, hs_vote = ?, hs_commit = ?, start_index = ?, start_term = ?,
         snap_index = ?, snap_term = ?, snap_conf = ?, snap_file = ?, snap_size = ?, snap_crc = ?, crc = ?
       WHERE id = 1`,
    );
    this.readStateStmt = db
      .prepare<[], [...StateRow, number]>(
        `SELECT seq, hs_term, hs_vote, hs_commit, start_index, start_term, snap_index, snap_term,
           snap_conf, snap_file, snap_size, snap_crc, crc FROM state WHERE id = 1`,
      )
      .raw();
  }

  /**
   * Opens (creating when absent) the log database at `path`.
   *
   * Durability: WAL mode with synchronous=NORMAL, so a commit only writes its frames to the WAL
   * and never fsyncs; the store then fdatasyncs the WAL itself once per group commit (see
   * DurableLogStore.sync), which is what synchronous=FULL would do at each commit, but where the
   * store chooses (the event loop or the thread pool) and once for a whole group. Checkpoints are
   * never automatic (a commit would otherwise run one, with two fsyncs, on the event loop); a worker
   * thread runs them, and SQLite still fsyncs the WAL before and the database after each one.
   * `limits` bound the connection's page cache and mapping, and the size SQLite cuts the WAL back to
   * when it restarts it after a checkpoint.
   */
  static open(path: string, conf: ConfState, limits: SqliteLimits): LogDatabase {
    let db: Database.Database;
    try {
      db = new Database(path);
    } catch (err) {
      throw translateSqliteError(path, err);
    }
    try {
      // Takes effect only while the file is new: before WAL mode writes its first page.
      db.pragma(`page_size = ${LOG_PAGE_BYTES}`);
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (mode !== "wal") throw new StorageFailedError(`${path}: SQLite refused WAL mode (${String(mode)})`);
      db.pragma("synchronous = NORMAL");
      db.pragma("wal_autocheckpoint = 0");
      applySqliteLimits(db, limits);
      const appId = db.pragma("application_id", { simple: true });
      const version = db.pragma("user_version", { simple: true });
      if (appId === 0 && version === 0) {
        const tables = db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get();
        if (tables !== 0) throw new StorageFormatError(path, "an SQLite database that is not a KeyLoad log");
        db.transaction(() => {
          db.exec(SCHEMA);
          db.pragma(`application_id = ${APPLICATION_ID}`);
          db.pragma(`user_version = ${FORMAT_VERSION}`);
          const row = stateToRow(initialState(conf));
          db.prepare("INSERT INTO state VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").run(
            ...row,
            rowChecksum(row),
          );
        })();
      } else if (appId !== APPLICATION_ID) {
        throw new StorageFormatError(path, "an SQLite database that is not a KeyLoad log");
      } else if (version !== FORMAT_VERSION) {
        throw new StorageFormatError(
          path,
          `log format version ${String(version)}, expected ${FORMAT_VERSION}`,
        );
      }
      return new LogDatabase(path, db);
    } catch (err) {
      db.close();
      throw translateSqliteError(path, err);
    }
  }

  /** Runs `fn` in one transaction: committed whole or not at all. */
  transaction<T>(fn: () => T): T {
    return this.guard(() => this.runInTransaction(fn) as T);
  }

  readState(): LogState {
    const row = this.guard(() => this.readStateStmt.get());
    if (row === undefined) throw new StorageCorruptionError(this.path, null, "the log state row is missing");
    const stored = row[12];
    const fields = row.slice(0, 12) as StateRow;
    if (rowChecksum(fields) !== stored) {
      throw new StorageCorruptionError(this.path, null, "the log state row fails its checksum");
    }
    const [seq, hsTerm, hsVote, hsCommit, startIndex, startTerm, snapIndex, snapTerm, conf] = fields;
    return {
      seq,
      hardState: { term: hsTerm, vote: hsVote, commit: hsCommit },
      startIndex,
      startTerm,
      snapshot: {
        meta: { index: snapIndex, term: snapTerm, conf: JSON.parse(conf) as ConfState },
        file: fields[9],
        size: fields[10],
        checksum: fields[11],
      },
    };
  }

  writeState(state: LogState): void {
    const row = stateToRow(state);
    this.guard(() => this.writeStateStmt.run(...row, rowChecksum(row)));
  }

  insert(entry: Entry): void {
    const kind = entryTypeCode(entry.type);
    const crc = checksumOfEntry(entry);
    this.guard(() => this.insertEntry.run(entry.index, entry.term, kind, entry.data, crc));
  }

  /**
   * Records a batch's state on the row of `entry`, which that batch inserted: the page is already
   * being written, where the state row would cost a second page in the WAL for every batch.
   */
  recordBatchState(entry: Entry, batch: BatchState): void {
    const crc = entryRowChecksum(checksumOfEntry(entry), batch);
    const hs = batch.hardState;
    this.guard(() => this.recordBatchStmt.run(batch.seq, hs.term, hs.vote, hs.commit, crc, entry.index));
  }

  /** Deletes every entry from `index` on. */
  deleteFrom(index: number): void {
    this.guard(() => this.deleteFromStmt.run(index));
  }

  /** Deletes the entries in [lo, hi). */
  deleteRange(lo: number, hi: number): void {
    this.guard(() => this.deleteRangeStmt.run(lo, hi));
  }

  /** The file's page size: LOG_PAGE_BYTES, or what it was created with. */
  pageBytes(): number {
    return this.guard(() => pageBytesOf(this.db));
  }

  /** The lowest index of any stored row, compacted or not, or null when the table is empty. */
  minIndex(): number | null {
    return this.guard(() => this.selectMin.get() ?? null);
  }

  /**
   * Entries in [lo, hi) in ascending order, checksums verified, until `keep` declines one. Rows are
   * not checked for gaps here: the caller knows which indexes it expects.
   */
  readRange(lo: number, hi: number, keep: (entry: Entry) => boolean): Entry[] {
    const out: Entry[] = [];
    this.guard(() => {
      for (const row of this.selectRange.iterate(lo, hi)) {
        const { entry } = this.verify(row);
        if (!keep(entry)) break;
        out.push(entry);
      }
    });
    return out;
  }

  /** Every entry after `index` in ascending order, checksums verified: the recovery scan. */
  *scanAfter(index: number): Generator<StoredEntry> {
    const it = this.guard(() => this.selectAfter.iterate(index));
    try {
      for (;;) {
        const next = this.guard(() => it.next());
        if (next.done) return;
        yield this.verify(next.value);
      }
    } finally {
      // Releases the statement (and its read transaction) when the scan stops early.
      it.return?.();
    }
  }

  /** Folds the whole WAL into the database file and empties it (fsyncing both), at open. */
  checkpointAndTruncate(): void {
    const [row] = this.guard(() => this.db.pragma("wal_checkpoint(TRUNCATE)")) as {
      busy: number;
      log: number;
      checkpointed: number;
    }[];
    // Only another connection to the file makes it busy; what the journal holds must not be dropped
    // on the strength of a checkpoint that did not happen.
    if (row === undefined || row.busy !== 0 || row.log !== row.checkpointed) {
      throw new StorageFailedError(
        `${this.path}: the checkpoint at open did not complete (another process has the log open?)`,
      );
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private verify(row: EntryRow): StoredEntry {
    const [index, term, kind, data, crc, seq, hsTerm, hsVote, hsCommit] = row;
    const type = entryTypeOf(kind);
    if (type === null) throw new StorageCorruptionError(this.path, index, `unknown entry type code ${kind}`);
    const entry: Entry = {
      index,
      term,
      type,
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    };
    let batch: BatchState | null = null;
    if (seq !== null) {
      if (hsTerm === null || hsCommit === null) {
        throw new StorageCorruptionError(this.path, index, "entry row carries an incomplete batch state");
      }
      batch = { seq, hardState: { term: hsTerm, vote: hsVote, commit: hsCommit } };
    }
    if (entryRowChecksum(entryChecksum(index, term, kind, entry.data), batch) !== crc) {
      throw new StorageCorruptionError(this.path, index, "entry checksum mismatch");
    }
    return { entry, batch };
  }

  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      throw translateSqliteError(this.path, err);
    }
  }
}

/** SQLite's own corruption codes become StorageCorruptionError; any other SQLite failure is fatal I/O. */
export function translateSqliteError(path: string, err: unknown): Error {
  if (err instanceof StorageError) return err;
  if (err instanceof Database.SqliteError) {
    const code = (err as Error & { code: string }).code;
    if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") {
      return new StorageCorruptionError(path, null, `SQLite reports ${code}: ${err.message}`, { cause: err });
    }
    return new StorageFailedError(`${path}: SQLite ${code}: ${err.message}`, { cause: err });
  }
  return err instanceof Error ? err : new StorageFailedError(String(err));
}
