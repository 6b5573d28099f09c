import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import {
  LogCompactedError,
  LogUnavailableError,
  RaftInvariantError,
  SnapshotOutOfDateError,
} from "../raft/errors.js";
import { LOG_PAGE_BYTES } from "./log-database.js";
import { LOG_FILE, SNAPSHOT_DIR } from "./log-recovery.js";
import type { SnapshotSource } from "./snapshot-source.js";
import {
  StorageArgumentError,
  StorageClosedError,
  StorageCorruptionError,
  StorageFormatError,
} from "./storage-errors.js";
import { CONF, dataFor, entries, entry, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const none = { snapshot: null, hardState: null };

describe("DurableLogStore", () => {
  it("starts a new directory empty, with the configured voters", () => {
    const store = fx.open(fx.dir());
    expect(store.initialState()).toEqual({ hardState: hs(0, null, 0), conf: CONF });
    expect(store.firstIndex()).toBe(1);
    expect(store.lastIndex()).toBe(0);
    expect(store.term(0)).toBe(0);
    expect(store.snapshot()).toEqual({ meta: { index: 0, term: 0, conf: CONF }, size: 0, checksum: 0 });
    expect(store.currentSnapshotPath()).toBeNull();
  });

  it("appends, reads back and recovers entries, hard state and bounds", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 5, 1, 100), hardState: hs(1, "n1", 3) });
    await w.write({ snapshot: null, entries: entries(6, 9, 2, 100), hardState: hs(2, "n2", 8) });
    expect(w.store.entries(1, 10, Number.MAX_SAFE_INTEGER)).toEqual([
      ...entries(1, 5, 1, 100),
      ...entries(6, 9, 2, 100),
    ]);
    await w.close();
    const store = fx.open(dir);
    expect(store.initialState().hardState).toEqual(hs(2, "n2", 8));
    expect(store.lastIndex()).toBe(9);
    expect(store.term(5)).toBe(1);
    expect(store.term(6)).toBe(2);
    expect(store.entries(4, 7, 1e9)).toEqual([entry(4, 1, 100), entry(5, 1, 100), entry(6, 2, 100)]);
  });

  it("keeps the page size its log database was created with, and stores entries of any size in it", async () => {
    const pageBytes = (dir: string): unknown => {
      const db = new Database(join(dir, LOG_FILE), { readonly: true });
      try {
        return db.pragma("page_size", { simple: true });
      } finally {
        db.close();
      }
    };
    const fresh = fx.dir();
    // A log an earlier build created: 4 KiB pages, SQLite's default.
    const earlier = fx.dir();
    const db = new Database(join(earlier, LOG_FILE));
    db.pragma("page_size = 4096");
    db.pragma("journal_mode = WAL");
    db.close();
    const sizes = [16, 1024, 40_000, 100_000];
    const written = sizes.map((size, i) => entry(i + 1, 1, size));
    for (const [dir, expected] of [
      [fresh, LOG_PAGE_BYTES],
      [earlier, 4096],
    ] as const) {
      const w = fx.openWriter(dir);
      await w.write({ snapshot: null, entries: written, hardState: hs(1, "n1", 2) });
      await w.close();
      const store = fx.open(dir);
      expect(store.entries(1, sizes.length + 1, 1e9)).toEqual(written);
      await store.close();
      expect(pageBytes(dir)).toBe(expected);
    }
  });

  it("tells its sync listeners how long each sync's fsyncs took", async () => {
    const w = fx.openWriter(fx.dir());
    const synced: number[] = [];
    w.store.onSynced((seconds) => synced.push(seconds));
    await w.write({ snapshot: null, entries: entries(1, 3, 1, 100), hardState: hs(1, "n1", 0) });
    await w.write({ snapshot: null, entries: entries(4, 4, 1, 100), hardState: null });
    expect(synced).toHaveLength(w.store.stats.syncs);
    expect(synced.length).toBeGreaterThanOrEqual(1);
    for (const seconds of synced) expect(seconds).toBeGreaterThan(0);
    await w.close();
  });

  it("answers reads from SQLite and the cache identically, honouring maxBytes", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { cacheEntries: 4 });
    for (let i = 1; i <= 20; i += 5) await w.write({ ...none, entries: entries(i, i + 4, 1, 40) });
    const store = w.store;
    // 64 bytes per entry as entrySize counts them (40 + 24).
    expect(store.entries(1, 21, 0)).toEqual([entry(1, 1, 40)]);
    expect(store.entries(1, 21, 64 * 3)).toHaveLength(3);
    expect(store.entries(14, 21, 64 * 5)).toEqual(entries(14, 18, 1, 40));
    expect(store.entries(1, 21, 1e9)).toEqual(entries(1, 20, 1, 40));
    expect(store.entries(18, 21, 1e9)).toEqual(entries(18, 20, 1, 40));
    expect(store.entries(5, 5, 1e9)).toEqual([]);
  });

  it("replaces a conflicting suffix and recovers the replacement", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { cacheEntries: 2 });
    await w.write({ ...none, entries: entries(1, 10, 1) });
    await w.write({ snapshot: null, entries: entries(7, 8, 2), hardState: hs(2, null, 6) });
    expect(w.store.lastIndex()).toBe(8);
    expect(w.store.entries(6, 9, 1e9)).toEqual([entry(6, 1), entry(7, 2), entry(8, 2)]);
    await w.close();
    const store = fx.open(dir);
    expect(store.lastIndex()).toBe(8);
    expect(store.term(8)).toBe(2);
    expect(() => store.term(9)).toThrow(LogUnavailableError);
  });

  it("installs a snapshot from the leader, replacing the log, and recovers it", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ ...none, entries: entries(1, 10, 1) });
    const data = dataFor(1, 1, 5000);
    const meta = { index: 20, term: 3, conf: CONF };
    const file = await w.store.snapshotFiles.store(meta, data);
    await w.write({ snapshot: file, entries: entries(21, 22, 3), hardState: hs(3, "n2", 20) });
    expect(w.store.firstIndex()).toBe(21);
    expect(w.store.lastIndex()).toBe(22);
    expect(w.store.term(20)).toBe(3);
    expect(() => w.store.term(19)).toThrow(LogCompactedError);
    const described = { meta, size: data.byteLength, checksum: crc32c(data) };
    expect(w.store.snapshot()).toEqual(described);
    await w.close();
    const store = fx.open(dir);
    expect(store.snapshot()).toEqual(described);
    expect(new Uint8Array(readFileSync(store.currentSnapshotPath()!))).toEqual(data);
    expect(store.entries(21, 23, 1e9)).toEqual(entries(21, 22, 3));
    expect(readdirSync(join(dir, SNAPSHOT_DIR))).toHaveLength(1);
    expect(store.currentSnapshotPath()).toMatch(/snap-0+20-3-[0-9a-f]{8}\.sqlite$/);
  });

  it("describes its snapshot to the core without reading the file, which only streams", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 3, 1), hardState: hs(1, null, 3) });
    const data = dataFor(9, 9, 50_000);
    const meta = { index: 20, term: 2, conf: CONF };
    const file = await w.store.snapshotFiles.store(meta, data);
    await w.write({ snapshot: file, entries: [], hardState: hs(2, null, 20) });
    await w.close();
    // Same size, other bytes: only a read of the whole file could tell.
    writeFileSync(join(dir, SNAPSHOT_DIR, file.file), new Uint8Array(data.byteLength));
    const store = fx.open(dir);
    expect(store.snapshot()).toEqual({ meta, size: data.byteLength, checksum: crc32c(data) });
    expect("readAll" in store.snapshotFiles).toBe(false);
    // Streaming it finds the damage before the last chunk is handed out.
    const reader = (await store.openSnapshotReader())!;
    await reader.readChunk(0, 30_000);
    await expect(reader.readChunk(30_000, 30_000)).rejects.toThrow(/checksum mismatch/);
    await reader.close();
  });

  it("a receive cut short by a crash leaves nothing visible: the next open deletes its temporary file", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 3, 1), hardState: hs(1, null, 3) });
    const old = await w.store.snapshotFiles.store({ index: 2, term: 1, conf: CONF }, dataFor(2, 1, 1000));
    await w.write({ snapshot: old, entries: entries(3, 3, 1), hardState: hs(1, null, 3) });
    const data = dataFor(7, 7, 100_000);
    const receiver = w.store.snapshotFiles.receive({ index: 50, term: 2, conf: CONF }, data.byteLength);
    await receiver.write(0, data.subarray(0, 40_000));
    // The process dies here: the receive is neither finished nor aborted.
    await w.close();
    expect(readdirSync(join(dir, SNAPSHOT_DIR)).filter((f) => f.endsWith(".part"))).toHaveLength(1);
    const store = fx.open(dir);
    expect(store.snapshotIndex()).toBe(2);
    expect(readdirSync(join(dir, SNAPSHOT_DIR))).toEqual([old.file]);
  });

  it("installs a snapshot received chunk by chunk and streams it back", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ snapshot: null, entries: entries(1, 3, 1), hardState: hs(1, null, 3) });
    const data = dataFor(7, 7, 100_000);
    const meta = { index: 50, term: 2, conf: CONF };
    const receiver = await w.store.snapshotFiles.receive(meta, data.byteLength);
    for (let off = 0; off < data.byteLength; off += 16_384)
      await receiver.write(off, data.subarray(off, off + 16_384));
    const file = await receiver.finish();
    await w.write({ snapshot: file, entries: [], hardState: hs(2, null, 50) });
    expect(w.store.snapshot()).toEqual({ meta, size: data.byteLength, checksum: crc32c(data) });
    expect(w.store.currentSnapshotPath()).toBe(join(dir, SNAPSHOT_DIR, file.file));
    const reader = (await w.store.openSnapshotReader())!;
    const parts: Uint8Array[] = [];
    for (let off = 0; off < file.size; off += 30_000) parts.push(await reader.readChunk(off, 30_000));
    await reader.close();
    expect(Buffer.concat(parts)).toEqual(Buffer.from(data));
    expect(await fx.open(fx.dir()).openSnapshotReader()).toBeNull();
  });

  it("compacts behind the snapshot and deletes the rows in the background", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { gcStepEntries: 7 });
    await w.write({ snapshot: null, entries: entries(1, 50, 1), hardState: hs(1, null, 50) });
    await w.createSnapshot(fileSource(40, 1, dataFor(9, 9, 300)), () => CONF);
    expect(() => w.store.compact(41)).toThrow(RaftInvariantError);
    w.store.compact(30);
    w.store.compact(20); // behind the compaction point: nothing to do
    expect(w.store.firstIndex()).toBe(31);
    expect(w.store.term(30)).toBe(1);
    expect(() => w.store.entries(30, 32, 1e9)).toThrow(LogCompactedError);
    await waitFor(() => countRows(dir) === 20);
    await w.close();
    const store = fx.open(dir);
    expect(store.firstIndex()).toBe(31);
    expect(store.snapshot()?.meta.index).toBe(40);
    expect(store.entries(31, 51, 1e9)).toEqual(entries(31, 50, 1));
  });

  it("checkpoints while compaction deletes rows, with nothing appended meanwhile", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir, { checkpointBytes: 256 * 1024, gcStepEntries: 128 });
    for (let i = 1; i <= 3000; i += 100) {
      await w.write({ snapshot: null, entries: entries(i, i + 99, 1, 1024), hardState: null });
    }
    await w.createSnapshot(fileSource(3000, 1, dataFor(9, 9, 300)), () => CONF);
    // Until the database has taken every batch in from the journal (every 20 ms) and a checkpoint
    // has followed the last of them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = w.store.stats.checkpoints;
    w.store.compact(3000);
    await waitFor(() => countRows(dir) === 0);
    // Deleting 3 MiB of rows wrote several times checkpointBytes of pages to the WAL.
    expect(w.store.stats.checkpoints).toBeGreaterThan(before + 1);
    await w.close();
  });

  it("reports entry sizes for the snapshot policy and the snapshot's size", async () => {
    const dir = fx.dir();
    const w = fx.openWriter(dir);
    await w.write({ ...none, entries: entries(1, 10, 1, 76) });
    expect(w.store.byteSize(1, 11)).toBe(1000);
    expect(w.store.byteSize(3, 5)).toBe(200);
    expect(() => w.store.byteSize(0, 5)).toThrow(StorageArgumentError);
    expect(() => w.store.byteSize(1, 12)).toThrow(StorageArgumentError);
    expect(w.store.snapshot()?.size).toBe(0);
    await w.createSnapshot(fileSource(8, 1, dataFor(8, 1, 3000)), () => CONF);
    expect(w.store.snapshot()?.size).toBe(3000);
    await w.close();
    expect(fx.open(dir).snapshot()?.size).toBe(3000);
  });

  describe("refuses bad input", () => {
    it("rejects reads outside the log or with non-integer bounds", async () => {
      const w = fx.openWriter(fx.dir());
      await w.write({ ...none, entries: entries(1, 3, 1) });
      const s = w.store;
      expect(() => s.entries(0, 2, 1e9)).toThrow(LogCompactedError);
      expect(() => s.entries(1, 5, 1e9)).toThrow(LogUnavailableError);
      expect(() => s.term(4)).toThrow(LogUnavailableError);
      expect(() => s.term(-1)).toThrow(LogCompactedError);
      expect(() => s.term(1.5)).toThrow(StorageArgumentError);
      expect(() => s.entries(1, Number.NaN, 1)).toThrow(StorageArgumentError);
      expect(() => s.entries(1, 2, Number.NaN)).toThrow(StorageArgumentError);
      expect(() => s.compact(0.5)).toThrow(StorageArgumentError);
    });

    it("throws at once for malformed writes", () => {
      const w = fx.openWriter(fx.dir());
      const bad = [
        { ...none, entries: [entry(1, 1), entry(3, 1)] },
        { ...none, entries: [entry(1, 2), entry(2, 1)] },
        { ...none, entries: [entry(0, 1)] },
        { ...none, entries: [entry(1, 0)] },
        { ...none, entries: [{ index: 1, term: 1, type: "weird", data: new Uint8Array() }] },
        { ...none, entries: [{ index: 1, term: 1, type: "normal", data: "text" }] },
        { snapshot: null, entries: [], hardState: { term: -1, vote: null, commit: 0 } },
        { snapshot: null, entries: [], hardState: { term: 1, vote: 7, commit: 0 } },
        {
          snapshot: { meta: { index: 0, term: 1, conf: CONF }, data: new Uint8Array() },
          entries: [],
          hardState: null,
        },
        {
          snapshot: { meta: { index: 1, term: 1, conf: {} }, data: new Uint8Array() },
          entries: [],
          hardState: null,
        },
      ];
      for (const write of bad) {
        expect(() => w.write(write as any), JSON.stringify(write)).toThrow(
          /must|type|consecutive|below|bytes|voters/,
        );
      }
    });

    it("rejects writes the log refuses, and stays usable", async () => {
      const w = fx.openWriter(fx.dir());
      await w.write({ snapshot: null, entries: entries(1, 5, 2), hardState: hs(2, "n1", 3) });
      await expect(w.write({ ...none, entries: [entry(7, 2)] })).rejects.toThrow(RaftInvariantError);
      await expect(w.write({ ...none, entries: [entry(6, 1)] })).rejects.toThrow(/below term 2/);
      await expect(w.write({ ...none, entries: [entry(3, 3)] })).rejects.toThrow(/committed entries/);
      await expect(w.write({ snapshot: null, entries: [], hardState: hs(1, null, 3) })).rejects.toThrow(
        /below the stored term/,
      );
      await expect(w.write({ snapshot: null, entries: [], hardState: hs(2, "n3", 3) })).rejects.toThrow(
        /changes the vote/,
      );
      await expect(w.write({ snapshot: null, entries: [], hardState: hs(2, "n1", 6) })).rejects.toThrow(
        /beyond the last index/,
      );
      const snapMeta = { index: 10, term: 2, conf: CONF };
      const snap = await w.store.snapshotFiles.store(snapMeta, new Uint8Array(10));
      await w.write({ snapshot: snap, entries: [], hardState: null });
      const again = await w.store.snapshotFiles.store(snapMeta, new Uint8Array(10));
      await expect(w.write({ snapshot: again, entries: [], hardState: null })).rejects.toThrow(
        SnapshotOutOfDateError,
      );
      await w.write({ snapshot: null, entries: entries(11, 12, 3), hardState: hs(3, "n2", 12) });
      expect(w.store.lastIndex()).toBe(12);
      expect(w.store.initialState().hardState).toEqual(hs(3, "n2", 12));
      expect(readdirSync(join(w.store.dir, SNAPSHOT_DIR))).toHaveLength(1);
    });

    it("refuses snapshots the log cannot stand on", async () => {
      const w = fx.openWriter(fx.dir());
      await w.write({ snapshot: null, entries: entries(1, 5, 2), hardState: hs(2, null, 5) });
      await expect(w.createSnapshot(fileSource(6, 2, new Uint8Array(3)), () => CONF)).rejects.toThrow(
        LogUnavailableError,
      );
      await expect(w.createSnapshot(fileSource(4, 1, new Uint8Array(3)), () => CONF)).rejects.toThrow(
        /term 1/,
      );
      await w.createSnapshot(fileSource(4, 2, new Uint8Array(3)), () => CONF);
      await expect(w.createSnapshot(fileSource(4, 2, new Uint8Array(3)), () => CONF)).rejects.toThrow(
        SnapshotOutOfDateError,
      );
      const failing = {
        ...fileSource(4, 2, new Uint8Array(3)),
        createSnapshotFile: () => Promise.reject(new Error("backup failed")),
      };
      await expect(w.createSnapshot(failing, () => CONF)).rejects.toThrow("backup failed");
      expect(readdirSync(join(w.store.dir, SNAPSHOT_DIR))).toHaveLength(1);
    });

    it("rejects invalid options", () => {
      const dir = fx.dir();
      expect(() => fx.open(dir, { cacheEntries: 0 })).toThrow(StorageArgumentError);
      expect(() => fx.open(dir, { cacheBytes: 1.5 })).toThrow(StorageArgumentError);
      expect(() => fx.open(dir, { gcStepEntries: -1 })).toThrow(StorageArgumentError);
      expect(() => fx.open(dir, { journalBytes: -1 })).toThrow(StorageArgumentError);
    });

    it("refuses a database that is not a KeyLoad log", () => {
      const dir = fx.dir();
      const other = new Database(join(dir, LOG_FILE));
      other.exec("CREATE TABLE t (x)");
      other.close();
      expect(() => fx.open(dir)).toThrow(StorageFormatError);
      const dir2 = fx.dir();
      writeFileSync(join(dir2, LOG_FILE), Buffer.alloc(8192, 0x41));
      expect(() => fx.open(dir2)).toThrow(StorageCorruptionError);
    });

    it("refuses a future format version", async () => {
      const dir = fx.dir();
      await fx.open(dir).close();
      const db = new Database(join(dir, LOG_FILE));
      db.pragma("user_version = 2");
      db.close();
      expect(() => fx.open(dir)).toThrow(/format version 2/);
    });

    it("fails every call once closed", async () => {
      const w = fx.openWriter(fx.dir());
      await w.close();
      expect(() => w.store.lastIndex()).toThrow(StorageClosedError);
      await expect(w.write({ ...none, entries: [entry(1, 1)] })).rejects.toThrow(StorageClosedError);
    });
  });
});

function fileSource(index: number, term: number, data: Uint8Array): SnapshotSource {
  return {
    async createSnapshotFile(path: string) {
      writeFileSync(path, data);
      return { index, term };
    },
    durablePosition: async () => ({ index, term }),
  };
}

function countRows(dir: string): number {
  const db = new Database(join(dir, LOG_FILE), { readonly: true });
  try {
    return db.prepare("SELECT count(*) FROM entries").pluck().get() as number;
  } finally {
    db.close();
  }
}

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}
