import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { LOG_FILE, SNAPSHOT_DIR, WATERMARK_FILE } from "./durable-log-store.js";
import type { DurableLogWriter } from "./durable-log-writer.js";
import { StorageCorruptionError } from "./storage-errors.js";
import { CONF, dataFor, entries, hs, storageFixture } from "./testing/storage-fixture.js";

const fx = storageFixture();
/** Large enough that no checkpoint folds the WAL into the database during a test. */
const NO_CHECKPOINT = { checkpointBytes: 1 << 30 };

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
  for (const name of [LOG_FILE, `${LOG_FILE}-wal`, WATERMARK_FILE]) {
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

async function filledLog(dir: string, options = {}): Promise<DurableLogWriter> {
  const w = fx.openWriter(dir, options);
  for (let i = 1; i <= 40; i += 10) {
    await w.write({ snapshot: null, entries: entries(i, i + 9, 1, 200), hardState: hs(1, "n1", i + 9) });
  }
  return w;
}

describe("corruption detection", () => {
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
    const w = await filledLog(dir, { cacheEntries: 5 });
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

  it("reports acknowledged writes lost from a garbled WAL (preallocated, as in production)", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, { ...NO_CHECKPOINT, walPreallocateBytes: 1 << 20 });
    // The watermark of the last batch is written in the turn after its fsync.
    await new Promise((resolve) => setImmediate(resolve));
    const image = crashImage(dir);
    const wal = join(image, `${LOG_FILE}-wal`);
    const bytes = readFileSync(wal);
    // Inside the first frame's page: SQLite's checksum chain breaks there and it ignores the rest.
    for (let i = 200; i < 260; i++) bytes[32 + 24 + i] = (bytes[32 + 24 + i] ?? 0) ^ 0xa5;
    writeFileSync(wal, bytes);
    const err = openError(image);
    expect(err.file).toBe(wal);
    expect(err.index).toBe(1);
    expect(err.message).toMatch(/acknowledged writes are missing: write batch 4 \(log up to index 40\)/);
    await w.close();
  });

  it("reports acknowledged writes lost from a truncated or deleted WAL", async () => {
    const dir = fx.dir();
    const w = await filledLog(dir, NO_CHECKPOINT);
    const image = crashImage(dir);
    const wal = join(image, `${LOG_FILE}-wal`);
    truncateSync(wal, Math.floor(statSync(wal).size * 0.6));
    const err = openError(image);
    expect(err.file).toBe(wal);
    expect(err.index).toBeGreaterThan(1);
    expect(err.index).toBeLessThanOrEqual(40);
    const image2 = crashImage(dir);
    rmSync(join(image2, `${LOG_FILE}-wal`));
    expect(openError(image2).index).toBe(1);
    await w.close();
  });

  it("accepts a torn WAL tail that was never acknowledged", async () => {
    const dir = fx.dir();
    let walAtLastSync = 0;
    let walBeforeTear = 0;
    let image = "";
    let tearNext = false;
    const wal = join(dir, `${LOG_FILE}-wal`);
    const w = fx.openWriter(dir, {
      ...NO_CHECKPOINT,
      faultHook: (point) => {
        if (point === "log-synced") walAtLastSync = statSync(wal).size;
        if (point === "log-committed" && tearNext) {
          image = crashImage(dir);
          walBeforeTear = walAtLastSync;
          tearNext = false;
        }
      },
    });
    await w.write({ snapshot: null, entries: entries(1, 20, 1, 300), hardState: hs(1, "n1", 20) });
    tearNext = true;
    await w.write({ snapshot: null, entries: entries(21, 60, 2, 300), hardState: hs(2, "n2", 60) });
    const imageWal = join(image, `${LOG_FILE}-wal`);
    const tornAt = Math.floor((walBeforeTear + statSync(imageWal).size) / 2);
    const intact = crashImage(image);
    truncateSync(imageWal, tornAt);
    const store = fx.open(image);
    expect(store.lastIndex()).toBe(20);
    expect(store.initialState().hardState).toEqual(hs(1, "n1", 20));
    // The same crash image without the tear: the unacknowledged batch survived whole, which is fine too.
    expect(fx.open(intact).lastIndex()).toBe(60);
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
      snapshot: { meta: { index: 100, term: 2, conf: CONF }, data: dataFor(0, 0, 9000) },
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
    expect(() => store.snapshot()).toThrow(`${path} at index 100: snapshot file checksum mismatch`);
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
