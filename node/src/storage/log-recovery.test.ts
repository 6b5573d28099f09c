import { existsSync, fstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_STORAGE_LIMITS } from "../fs/sqlite-limits.js";
import type { Entry } from "../raft/types.js";
import { resolveOptions } from "./durable-log-options.js";
import type { EntryCache } from "./entry-cache.js";
import { absorbInto } from "./journal-absorber.js";
import { LogDatabase, type LogState } from "./log-database.js";
import type { LogIndex } from "./log-index.js";
import { JOURNAL_FILES, type JournalBatch, LogJournal } from "./log-journal.js";
import {
  checkSnapshot,
  LOG_FILE,
  type RecoveredLog,
  recover,
  recoverLog,
  replay,
  SNAPSHOT_DIR,
  WATERMARK_FILE,
} from "./log-recovery.js";
import { SnapshotFileStore } from "./snapshot-file-store.js";
import { StorageCorruptionError } from "./storage-errors.js";
import { CONF, entries, entry, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

function openDb(dir: string): LogDatabase {
  const db = LogDatabase.open(join(dir, LOG_FILE), CONF, DEFAULT_STORAGE_LIMITS.log);
  closers.push(() => db.close());
  return db;
}

/** A database holding `batches` taken in one after the other, as the absorber would have. */
function dbWith(dir: string, ...batches: [seq: number, first: number, last: number, term: number][]) {
  const db = openDb(dir);
  for (const [seq, first, last, term] of batches) {
    const hardState = hs(term, "n1", 0);
    absorbInto(db, db.readState(), [
      {
        seq,
        ops: [{ entries: entries(first, last, term), hardState, truncates: false }],
        hardState,
        bytes: 0,
      },
    ]);
  }
  return db;
}

/** Rows written directly, bypassing the checks a store makes. */
function insertAll(db: LogDatabase, rows: readonly Entry[]): void {
  db.transaction(() => {
    for (const e of rows) db.insert(e);
  });
}

/** A journal in `dir` holding `batches` (fsynced), reopened as an open after a crash finds it. */
async function journalWith(dir: string, batches: readonly JournalBatch[]): Promise<LogJournal> {
  const written = LogJournal.open(dir, { preallocateBytes: 64 * 1024 });
  written.restart();
  for (const b of batches) written.append(b);
  await written.sync("event-loop");
  written.close();
  const j = LogJournal.open(dir, { preallocateBytes: 64 * 1024 });
  closers.push(() => j.close());
  return j;
}

function appended(seq: number, first: number, last: number, term: number, commit = 0): JournalBatch {
  return { seq, ops: [{ entries: entries(first, last, term), hardState: hs(term, "n1", commit) }] };
}

const terms = (index: LogIndex): number[] => {
  const out: number[] = [];
  for (let i = index.firstIndex; i <= index.lastIndex; i++) out.push(index.term(i));
  return out;
};

function scan(db: LogDatabase): { index: LogIndex; cache: EntryCache; state: LogState } {
  const stored = db.readState();
  const { index, cache, batch } = recover(db, stored, 100, 1 << 20);
  return { index, cache, state: { ...stored, seq: batch.seq, hardState: batch.hardState } };
}

describe("recover", () => {
  it("rebuilds the index and cache, and finds the highest batch state among the rows", () => {
    const db = dbWith(fx.dir(), [3, 1, 2, 1], [4, 3, 5, 2]);
    const { index, cache, state } = scan(db);
    expect(terms(index)).toEqual([1, 1, 2, 2, 2]);
    expect(cache.slice(1, 6)).toEqual([...entries(1, 2, 1), ...entries(3, 5, 2)]);
    expect(state.seq).toBe(4);
    expect(state.hardState).toEqual(hs(2, "n1", 0));
  });

  it("refuses a missing entry and a term going back, naming the index", () => {
    const gap = openDb(fx.dir());
    insertAll(gap, [entry(1, 1), entry(2, 1), entry(4, 1)]);
    expect(() => scan(gap)).toThrow(StorageCorruptionError);
    expect(() => scan(gap)).toThrow(expect.objectContaining({ file: gap.path, index: 3 }));
    const back = openDb(fx.dir());
    insertAll(back, [entry(1, 2), entry(2, 1)]);
    expect(() => scan(back)).toThrow(expect.objectContaining({ file: back.path, index: 2 }));
  });
});

describe("replay", () => {
  it("takes in the journal's batches after the database's, in order, over the database", async () => {
    const dir = fx.dir();
    const db = dbWith(dir, [1, 1, 3, 1]);
    const journal = await journalWith(dir, [
      appended(1, 1, 3, 1),
      appended(2, 4, 5, 1),
      // Replaces entry 5 with one of term 2.
      appended(3, 5, 6, 2),
      { seq: 4, ops: [{ entries: [], hardState: hs(2, "n1", 6) }] },
    ]);
    const { index, cache, state } = scan(db);
    expect(replay(db, state, index, cache, journal)).toEqual({ seq: 4, hardState: hs(2, "n1", 6) });
    expect(terms(index)).toEqual([1, 1, 1, 1, 2, 2]);
    expect(cache.slice(5, 7)).toEqual(entries(5, 6, 2));
    // The database now holds it all: a second scan finds it with no journal.
    const again = scan(db);
    expect(terms(again.index)).toEqual([1, 1, 1, 1, 2, 2]);
    expect(again.state).toMatchObject({ seq: 4, hardState: hs(2, "n1", 6) });
  });

  it("changes nothing when the journal holds no later batch", async () => {
    const dir = fx.dir();
    const db = dbWith(dir, [1, 1, 3, 1]);
    const journal = await journalWith(dir, [appended(1, 1, 3, 1)]);
    const { index, cache, state } = scan(db);
    expect(replay(db, state, index, cache, journal)).toBe(state);
    expect(index.lastIndex).toBe(3);
  });

  it("refuses a batch that leaves a gap or takes a term back, naming the journal and the index", async () => {
    const dir = fx.dir();
    const db = dbWith(dir, [1, 1, 3, 2]);
    const journal = await journalWith(dir, [appended(2, 5, 5, 2)]);
    const { index, cache, state } = scan(db);
    expect(() => replay(db, state, index, cache, journal)).toThrow(
      expect.objectContaining({ file: journal.path, index: 5, message: expect.stringContaining("gap") }),
    );

    const other = fx.dir();
    const db2 = dbWith(other, [1, 1, 3, 2]);
    const back = await journalWith(other, [appended(2, 4, 4, 1)]);
    const s2 = scan(db2);
    expect(() => replay(db2, s2.state, s2.index, s2.cache, back)).toThrow(
      expect.objectContaining({ file: back.path, index: 4 }),
    );
  });
});

describe("checkSnapshot", () => {
  it("accepts the empty snapshot of a new log and a point with no file, refuses one the log does not hold", () => {
    const dir = fx.dir();
    const db = dbWith(dir, [1, 1, 3, 2]);
    const files = SnapshotFileStore.open(join(dir, SNAPSHOT_DIR));
    const { index, state } = scan(db);
    expect(() => checkSnapshot(db.path, state, index, files)).not.toThrow();
    const at = (i: number, term: number, file: string | null = null): LogState => ({
      ...state,
      snapshot: { ...state.snapshot, meta: { ...state.snapshot.meta, index: i, term }, file },
    });
    expect(() => checkSnapshot(db.path, at(4, 2), index, files)).toThrow(/lies outside the log/);
    expect(() => checkSnapshot(db.path, at(2, 1), index, files)).toThrow(/has term 1, the log 2/);
    // A snapshot point: the state database vouches for it (checked by the voter at start).
    expect(() => checkSnapshot(db.path, at(2, 2), index, files)).not.toThrow();
    expect(() => checkSnapshot(db.path, at(2, 2, "snap-2-2-x.sqlite"), index, files)).toThrow(
      StorageCorruptionError,
    );
  });
});

describe("recoverLog", () => {
  const opts = resolveOptions({ conf: CONF, journalBytes: 64 * 1024 }, DEFAULT_STORAGE_LIMITS.log);
  const open = <T>(dir: string, build: (log: RecoveredLog) => T): T =>
    recoverLog(dir, CONF, DEFAULT_STORAGE_LIMITS.log, opts, build);

  /** Closes what a recovery opened, as the store's close would. */
  const release = (log: RecoveredLog): void => {
    void log.checkpointer.close();
    log.watermark.close();
    log.journal.close();
    log.db.close();
  };

  it("lays out a new data directory and hands over an empty log", () => {
    const dir = join(fx.dir(), "data");
    const log = open(dir, (l) => l);
    closers.push(() => release(log));
    for (const name of [LOG_FILE, WATERMARK_FILE, SNAPSHOT_DIR, ...JOURNAL_FILES]) {
      expect(existsSync(join(dir, name))).toBe(true);
    }
    expect(log.state.seq).toBe(0);
    expect(log.index.lastIndex).toBe(0);
    expect(log.gcNext).toBeNull();
    expect(fstatSync(log.walFd).isFile()).toBe(true);
  });

  it("closes everything it opened when handing over fails", () => {
    const dir = fx.dir();
    let handed: RecoveredLog | null = null;
    expect(() =>
      open(dir, (l) => {
        handed = l;
        throw new Error("refused");
      }),
    ).toThrow("refused");
    const log = handed as RecoveredLog | null;
    if (log === null) throw new Error("never handed over");
    closers.push(() => {
      void log.checkpointer.close();
      log.watermark.close();
    });
    expect(() => fstatSync(log.walFd)).toThrow(/EBADF/);
    expect(() => log.db.minIndex()).toThrow();
    // The files are free again: a second recovery opens them.
    closers.push(
      release.bind(
        null,
        open(dir, (l) => l),
      ),
    );
  });

  it("refuses a log whose acknowledgement watermark is gone, and hands over nothing", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 3, 1), hardState: hs(1, "n1", 0) });
    await w.close();
    rmSync(join(dir, WATERMARK_FILE));
    let built = false;
    expect(() =>
      open(dir, () => {
        built = true;
      }),
    ).toThrow(/acknowledgement watermark is missing/);
    expect(built).toBe(false);
  });
});
