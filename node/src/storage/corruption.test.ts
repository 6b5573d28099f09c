import { cpSync, existsSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { acceptEntryChecksum, entryChecksum } from "../raft/entry-checksum.js";
import { entryTypeCode } from "../raft/entry-type.js";
import type { DurableLogStore } from "./durable-log-store.js";
import type { DurableLogWriter } from "./durable-log-writer.js";
import { JOURNAL_FILES } from "./log-journal.js";
import { LOG_FILE, SNAPSHOT_DIR, WATERMARK_FILE } from "./log-recovery.js";
import { StorageCorruptionError } from "./storage-errors.js";
import { CONF, dataFor, entries, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
/** Batches stay in the journal only: the database takes none in while the test runs. */
const IN_JOURNAL = { absorbIntervalMs: 1e9 };

/** Waits until the database has taken in every journaled batch (its timer, at 0 ms, fires first). */
const absorbed = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

/** The end offset of each record chained from the start of a journal file. */
function recordEnds(path: string): number[] {
  const bytes = readFileSync(path);
  const ends: number[] = [];
  let at = 0;
  while (at + 12 <= bytes.length && bytes.readUInt32LE(at) !== 0) {
    // The length word's top two bits are flags (entries with their own checksums; the record before
    // was durable when this one was written).
    at += 12 + (bytes.readUInt32LE(at) & 0x3fff_ffff);
    ends.push(at);
  }
  return ends;
}

function sql(dir: string, statement: string, ...params: unknown[]): void {
  const db = new Database(join(dir, LOG_FILE));
  try {
    db.prepare(statement).run(...params);
  } finally {
    db.close();
  }
}

/** Copies the files a crash would leave (the store being still open), as a power cut would find them. */
function crashImage(from: string): string {
  const to = fx.dir();
  for (const name of [LOG_FILE, `${LOG_FILE}-wal`, WATERMARK_FILE, ...JOURNAL_FILES]) {
    if (existsSync(join(from, name))) cpSync(join(from, name), join(to, name));
  }
  cpSync(join(from, SNAPSHOT_DIR), join(to, SNAPSHOT_DIR), { recursive: true });
  return to;
}

function openError(dir: string): StorageCorruptionError {
  try {
    fx.open(dir);
  } catch (err) {
    expect(err).toBeInstanceOf(StorageCorruptionError);
    return err as StorageCorruptionError;
  }
  throw new Error(`opening ${dir} succeeded`);
}

async function filledLog(dir: string, options = {}): Promise<DurableLogWriter<DurableLogStore>> {
  const w = fx.openWriter(dir, options);
  for (let i = 1; i <= 40; i += 10) {
    await w.write({ snapshot: null, entries: entries(i, i + 9, 1, 200), hardState: hs(1, "n1", i + 9) });
  }
  return w;
}

describe("corruption detection", () => {
  it("stores an entry under the checksum it arrived with, so bytes changed after receipt are caught", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { absorbIntervalMs: 0 });
    const batch = entries(1, 10, 1, 200);
    const received = batch[2]!;
    const sent = entryChecksum(received.index, received.term, entryTypeCode(received.type), received.data);
    expect(acceptEntryChecksum(received, sent)).toBe(true);
    // Between the check on receipt and the write, a fault changes a bit of the entry in memory.
    received.data[7]! ^= 0x10;
    await w.write({ snapshot: null, entries: batch, hardState: hs(1, "n1", 10) });
    await absorbed();
    await w.close();
    expect(openError(dir)).toMatchObject({ index: 3, message: expect.stringMatching(/checksum mismatch/) });
  });

  it("reports flipped entry data at open, naming the file and the index", async () => {
    const dir = fx.dir();
    await (await filledLog(dir)).close();
    sql(dir, "UPDATE entries SET data = ? WHERE idx = 17", Buffer.from(dataFor(17, 2, 200)));
    const err = openError(dir);
    expect(err.file).toBe(join(dir, LOG_FILE));
    expect(err.index).toBe(17);
    expect(err.message).toBe(`${join(dir, LOG_FILE)} at index 17: entry checksum mismatch`);
    expect(err.code).toBe("StorageCorruption");
  });

  it("reports damage found while reading an entry older than the cache", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, { cacheEntries: 5, absorbIntervalMs: 0 });
    await absorbed();
    sql(dir, "UPDATE entries SET data = ? WHERE idx = 3", Buffer.alloc(200));
    expect(w.store.entries(38, 41, 1e9)).toHaveLength(3);
    expect(() => w.store.entries(1, 10, 1e9)).toThrow(
      `${join(dir, LOG_FILE)} at index 3: entry checksum mismatch`,
    );
  });

  it("reports a changed term, an unknown type and a missing entry", async () => {
    const dir = fx.dir();
    await (await filledLog(dir)).close();
    sql(dir, "UPDATE entries SET term = 2 WHERE idx = 40");
    expect(openError(dir)).toMatchObject({ index: 40, message: expect.stringMatching(/checksum mismatch/) });
    sql(dir, "UPDATE entries SET term = 1, kind = 9 WHERE idx = 40");
    expect(openError(dir)).toMatchObject({ index: 40, message: expect.stringMatching(/unknown entry type/) });
    sql(dir, "UPDATE entries SET kind = 0 WHERE idx = 40");
    sql(dir, "DELETE FROM entries WHERE idx = 25");
    expect(openError(dir)).toMatchObject({
      index: 25,
      message: expect.stringMatching(/entry 25 is missing/),
    });
  });

  it("reports a tampered state row, or a tampered hard state recorded on an entry row", async () => {
    const dir = fx.dir();
    await (await filledLog(dir)).close();
    sql(dir, "UPDATE state SET hs_vote = 'n3'");
    expect(openError(dir).message).toMatch(/state row fails its checksum/);
    const dir2 = fx.dir();
    const w = await filledLog(dir2);
    await w.close();
    sql(dir2, "UPDATE entries SET hs_commit = 12 WHERE idx = 40");
    expect(openError(dir2)).toMatchObject({ index: 40, message: expect.stringMatching(/checksum mismatch/) });
  });

  it("reports acknowledged writes lost from a garbled journal", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, IN_JOURNAL);
    // The watermark of the last batch is written in the turn after its fsync.
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    const journal = join(image, JOURNAL_FILES[0]);
    const original = readFileSync(journal);
    const ends = recordEnds(journal);
    // Inside the last record: its checksum fails, nothing follows it, and the chain ends before it, as
    // at a torn tail; the acknowledgement watermark tells that it was acknowledged.
    const last = Buffer.from(original);
    for (let i = ends.at(-2)! + 100; i < ends.at(-2)! + 160; i++) last[i] = (last[i] ?? 0) ^ 0xa5;
    writeFileSync(journal, last);
    const err = openError(image);
    expect(err.file).toBe(join(image, "raft-log.journal-*"));
    expect(err.index).toBe(31);
    expect(err.message).toMatch(/acknowledged writes are missing: write batch 4 \(log up to index 40\)/);
    // Inside the second: the records after it were written once it was durable, so no crash tore it.
    const second = Buffer.from(original);
    for (let i = ends[0]! + 100; i < ends[0]! + 160; i++) second[i] = (second[i] ?? 0) ^ 0xa5;
    writeFileSync(journal, second);
    expect(openError(image)).toMatchObject({
      file: journal,
      message: expect.stringMatching(/damaged, yet the record after it was written once it was durable/),
    });
    await w.close();
  });

  it("reports acknowledged writes lost from a truncated or deleted journal", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, IN_JOURNAL);
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    const journal = join(image, JOURNAL_FILES[0]);
    truncateSync(journal, Math.floor(recordEnds(journal).at(-1)! * 0.6));
    const err = openError(image);
    expect(err.index).toBeGreaterThan(1);
    expect(err.index).toBeLessThanOrEqual(40);
    const image2 = crashImage(dir);
    for (const name of JOURNAL_FILES) rmSync(join(image2, name));
    expect(openError(image2).index).toBe(1);
    await w.close();
  });

  it("accepts a torn journal tail that was never acknowledged", async () => {
    const dir = fx.dir();
    let image = "";
    let tearNext = false;
    const w = fx.openWriter(dir, {
      ...IN_JOURNAL,
      faultHook: (point) => {
        if (point === "log-committed" && tearNext) {
          image = crashImage(dir);
          tearNext = false;
        }
      },
    });
    await w.write({ snapshot: null, entries: entries(1, 20, 1, 300), hardState: hs(1, "n1", 20) });
    tearNext = true;
    await w.write({ snapshot: null, entries: entries(21, 60, 2, 300), hardState: hs(2, "n2", 60) });
    const intact = crashImage(image);
    const journal = join(image, JOURNAL_FILES[0]);
    const [first, second] = recordEnds(journal);
    truncateSync(journal, Math.floor((first! + second!) / 2));
    const store = fx.open(image);
    expect(store.lastIndex()).toBe(20);
    expect(store.initialState().hardState).toEqual(hs(1, "n1", 20));
    // The same crash image without the tear: the unacknowledged batch survived whole, which is fine too.
    expect(fx.open(intact).lastIndex()).toBe(60);
    await w.close();
  });

  it("takes in batches from both journal files after a switch, and those the database already holds", async () => {
    const dir = fx.dir();
    // Files of 16 KiB switch every ~8 KiB, here every three batches or so.
    const w = fx.openWriter(dir, { ...IN_JOURNAL, journalBytes: 16 * 1024 });
    for (let i = 1; i <= 200; i += 10) {
      await w.write({ snapshot: null, entries: entries(i, i + 9, 1, 300), hardState: hs(1, "n1", i + 9) });
    }
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    const sizes = JOURNAL_FILES.map((name) => recordEnds(join(image, name)).length);
    expect(sizes.every((n) => n > 0)).toBe(true);
    const store = fx.open(image);
    expect(store.lastIndex()).toBe(200);
    expect(store.entries(1, 201, 1e9).map((e) => e.index)).toEqual(entries(1, 200, 1).map((e) => e.index));
    await w.close();
  });

  it("refuses to open, keeping the journal, while another connection stops the checkpoint at open", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, IN_JOURNAL);
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    await w.close();
    const reader = new Database(join(image, LOG_FILE), { readonly: true });
    reader.exec("BEGIN");
    reader.prepare("SELECT count(*) FROM sqlite_master").get();
    try {
      expect(() => fx.open(image)).toThrow(/checkpoint at open did not complete/);
    } finally {
      reader.close();
    }
    expect(fx.open(image).lastIndex()).toBe(40);
    // The checkpoint waits out SQLite's busy timeout (5 s) before it reports the reader in the way.
  }, 20_000);

  it("puts a group larger than a journal file straight into the database", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, IN_JOURNAL);
    await w.write({ snapshot: null, entries: entries(1, 5, 1, 200), hardState: hs(1, "n1", 5) });
    // 100 entries of 1 KiB: past the fixture's 64 KiB journal files.
    await w.write({ snapshot: null, entries: entries(6, 105, 1, 1024), hardState: hs(1, "n1", 105) });
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    // Without the journal, only the database vouches for the big group, and for the batch before it.
    for (const name of JOURNAL_FILES) rmSync(join(image, name));
    const store = fx.open(image);
    expect(store.lastIndex()).toBe(105);
    expect(store.initialState().hardState).toEqual(hs(1, "n1", 105));
    await w.write({ snapshot: null, entries: entries(106, 110, 1, 200), hardState: hs(1, "n1", 110) });
    await w.close();
    expect(fx.open(dir).lastIndex()).toBe(110);
  });

  it("refuses a vote longer than the journal's record holds, and keeps one just short of it", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, IN_JOURNAL);
    const tooLong = "v".repeat(0xffff);
    await expect(async () =>
      w.write({ snapshot: null, entries: entries(1, 1, 1), hardState: hs(1, tooLong, 0) }),
    ).rejects.toThrow(/at most 65534 UTF-8 bytes/);
    const longest = "é".repeat(0xfffe / 2);
    await w.write({ snapshot: null, entries: entries(1, 1, 1), hardState: hs(1, longest, 0) });
    await new Promise((resolve) => setImmediate(resolve));
    expect(fx.open(crashImage(dir)).initialState().hardState).toEqual(hs(1, longest, 0));
    await w.close();
  });

  it("recovers batches journaled after a snapshot install, with or without a sync between", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, IN_JOURNAL);
    await w.write({ snapshot: null, entries: entries(1, 10, 1, 200), hardState: hs(1, "n1", 10) });
    const snap = await w.store.snapshotFiles.store({ index: 20, term: 2, conf: CONF }, dataFor(20, 2, 3000));
    await w.write({ snapshot: snap, entries: entries(21, 25, 2, 200), hardState: hs(2, "n2", 20) });
    await w.write({ snapshot: null, entries: entries(26, 30, 2, 200), hardState: hs(2, "n2", 25) });
    await new Promise((resolve) => setImmediate(resolve));
    const store = fx.open(crashImage(dir));
    expect([store.firstIndex(), store.lastIndex()]).toEqual([21, 30]);
    expect(store.initialState().hardState).toEqual(hs(2, "n2", 25));
    // Straight through the store, with no sync after the snapshot's commit.
    const s = w.store;
    const file = await s.snapshotFiles.store({ index: 40, term: 3, conf: CONF }, dataFor(40, 3, 3000));
    const install = { kind: "persist", snapshot: file, entries: [], hardState: hs(3, null, 40) } as const;
    expect(s.commit([install])).toEqual([null]);
    const append = {
      kind: "persist",
      snapshot: null,
      entries: entries(41, 45, 3, 200),
      hardState: null,
    } as const;
    expect(s.commit([append])).toEqual([null]);
    await s.sync();
    await new Promise((resolve) => setImmediate(resolve));
    const after = fx.open(crashImage(dir));
    expect([after.firstIndex(), after.lastIndex()]).toEqual([41, 45]);
    expect(after.initialState().hardState).toEqual(hs(3, null, 40));
    await w.close();
  });

  it("reports a deleted or damaged watermark, and a deleted database", async () => {
    const dir = fx.dir();
    await (await filledLog(dir)).close();
    const image = crashImage(dir);
    rmSync(join(image, WATERMARK_FILE));
    expect(openError(image)).toMatchObject({ file: join(image, WATERMARK_FILE), index: null });
    const image2 = crashImage(dir);
    const mark = readFileSync(join(image2, WATERMARK_FILE));
    mark[9] = (mark[9] ?? 0) ^ 1;
    writeFileSync(join(image2, WATERMARK_FILE), mark);
    expect(openError(image2).message).toMatch(/watermark fails its checksum/);
    writeFileSync(join(image2, WATERMARK_FILE), "short");
    expect(openError(image2).message).toMatch(/not a KeyLoad acknowledgement watermark/);
    const image3 = crashImage(dir);
    rmSync(join(image3, LOG_FILE));
    rmSync(join(image3, `${LOG_FILE}-wal`), { force: true });
    expect(openError(image3).message).toMatch(/log database is missing, yet writes up to index 40/);
  });

  it("reports a damaged, truncated or missing snapshot file", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir);
    await w.write({
      snapshot: await w.store.snapshotFiles.store({ index: 100, term: 2, conf: CONF }, dataFor(0, 0, 9000)),
      entries: [],
      hardState: hs(2, null, 100),
    });
    await w.close();
    const snapDir = join(dir, SNAPSHOT_DIR);
    const [file] = readdirSync(snapDir);
    const path = join(snapDir, file!);
    const intact = fx.open(dir);
    expect(intact.verifiedSnapshotPath()).toBe(path);
    await intact.close();
    const bytes = readFileSync(path);
    bytes[4500] = (bytes[4500] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    const store = fx.open(dir);
    // Streamed to a follower, the damage is found before the chunk that completes the file goes out.
    const reader = (await store.openSnapshotReader())!;
    const readAll = async (): Promise<void> => {
      for (let at = 0; at < 9000; at += 4096) await reader.readChunk(at, 4096);
    };
    await expect(readAll()).rejects.toThrow(`${path} at index 100: snapshot file checksum mismatch`);
    await reader.close();
    // What a voter installs into its state machine at start is read whole first, in chunks.
    expect(() => store.verifiedSnapshotPath()).toThrow(
      `${path} at index 100: snapshot file checksum mismatch`,
    );
    await store.close();
    truncateSync(path, 10);
    expect(openError(dir)).toMatchObject({ file: path, index: 100 });
    rmSync(path);
    expect(openError(dir).message).toMatch(/snapshot file the log refers to is missing/);
  });
});
