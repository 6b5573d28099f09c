import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { SnapshotFileStore } from "./snapshot-file-store.js";
import { SnapshotReceiver } from "./snapshot-receiver.js";
import {
  SnapshotChunkOutOfOrderError,
  SnapshotMismatchError,
  StorageArgumentError,
  StorageCorruptionError,
} from "./storage-errors.js";
import { CONF, dataFor, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const meta = { index: 7, term: 2, conf: CONF };

function openFiles(): SnapshotFileStore {
  return SnapshotFileStore.open(join(fx.dir(), "snapshots"));
}

describe("SnapshotFileStore", () => {
  it("receives a snapshot in chunks and seals it under a fresh name", async () => {
    const files = openFiles();
    const data = dataFor(1, 1, 10_000);
    const r = await files.receive(meta, data.byteLength);
    for (let off = 0; off < data.byteLength; off += 3000) {
      await r.write(off, data.subarray(off, off + 3000));
    }
    expect(r.receivedBytes).toBe(10_000);
    const snap = await r.finish(crc32c(data));
    expect(snap).toMatchObject({ meta, size: 10_000, checksum: crc32c(data) });
    expect(snap.file).toMatch(/^snap-0{19}7-2-[0-9a-f]{8}\.sqlite$/);
    expect(readdirSync(files.dir)).toEqual([snap.file]);
    expect(new Uint8Array(readFileSync(files.path(snap.file)))).toEqual(data);
  });

  it("writes a chunk whole when the disk takes it in parts", async () => {
    const data = dataFor(3, 1, 8192);
    const path = join(fx.dir(), "partial");
    const opened = await open(path, "w+");
    // At most 1000 bytes a write, as a nearly full disk may take.
    const handle = new Proxy(opened, {
      get(target, name) {
        if (name === "write") {
          return (buffer: Uint8Array, at: number, length: number, position: number) =>
            target.write(buffer, at, Math.min(length, 1000), position);
        }
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const r = new SnapshotReceiver(
      meta,
      data.byteLength,
      Promise.resolve(handle),
      async (_h, size, checksum) => ({ meta, file: "partial", size, checksum }),
      async () => undefined,
    );
    await r.write(0, data.subarray(0, 4096));
    await r.write(4096, data.subarray(4096));
    await r.finish(crc32c(data));
    await opened.close();
    expect(new Uint8Array(readFileSync(path))).toEqual(data);
  });

  it("accepts chunks queued without waiting for each other", async () => {
    const files = openFiles();
    const data = dataFor(2, 1, 4096);
    const r = await files.receive(meta, data.byteLength);
    await Promise.all([0, 1024, 2048, 3072].map((off) => r.write(off, data.subarray(off, off + 1024))));
    const snap = await r.finish();
    expect(new Uint8Array(readFileSync(files.path(snap.file)))).toEqual(data);
  });

  it("refuses chunks out of order, beyond the announced size, or after the end", async () => {
    const files = openFiles();
    const r = await files.receive(meta, 10);
    await expect(r.write(5, new Uint8Array(5))).rejects.toThrow(SnapshotChunkOutOfOrderError);
    await r.write(0, new Uint8Array(4));
    await expect(r.write(0, new Uint8Array(4))).rejects.toMatchObject({ expected: 4 });
    await expect(r.write(4, new Uint8Array(7))).rejects.toThrow(SnapshotMismatchError);
    await expect(r.finish()).rejects.toThrow(/holds 4 of 10/);
    await expect(r.write(4, new Uint8Array(6))).rejects.toThrow(StorageArgumentError);
    expect(readdirSync(files.dir)).toEqual([]);
  });

  it("refuses a snapshot whose checksum differs from the announced one, and can abort", async () => {
    const files = openFiles();
    const r = await files.receive(meta, 3);
    await r.write(0, new Uint8Array([1, 2, 3]));
    await expect(r.finish(12345)).rejects.toThrow(SnapshotMismatchError);
    const r2 = await files.receive(meta, 3);
    await r2.write(0, new Uint8Array([1]));
    await r2.abort();
    await r2.abort();
    expect(readdirSync(files.dir)).toEqual([]);
  });

  it("refuses bad metadata and sizes", async () => {
    const files = openFiles();
    expect(() => files.receive({ ...meta, index: 0 }, 1)).toThrow(StorageArgumentError);
    expect(() => files.receive({ ...meta, term: 1.5 }, 1)).toThrow(StorageArgumentError);
    expect(() => files.receive(meta, -1)).toThrow(StorageArgumentError);
  });

  it("adopts a file a snapshot source wrote", async () => {
    const files = openFiles();
    const temp = files.tempPath();
    const data = dataFor(3, 3, 3_000_000);
    writeFileSync(temp, data);
    const snap = await files.adopt(temp, meta);
    expect(snap.size).toBe(data.byteLength);
    expect(snap.checksum).toBe(crc32c(data));
    expect(readdirSync(files.dir)).toEqual([snap.file]);
  });

  it("streams a snapshot in chunks and verifies it on the way", async () => {
    const files = openFiles();
    const data = dataFor(4, 4, 5000);
    const snap = await files.store(meta, data);
    const reader = await files.openReader(snap);
    try {
      const parts: Uint8Array[] = [];
      for (let off = 0; off < snap.size; off += 1500) parts.push(await reader.readChunk(off, 1500));
      expect(Buffer.concat(parts)).toEqual(Buffer.from(data));
      expect(await reader.readChunk(5000, 10)).toEqual(new Uint8Array(0));
      await expect(reader.readChunk(5001, 1)).rejects.toThrow(StorageArgumentError);
      await expect(reader.readChunk(-1, 1)).rejects.toThrow(StorageArgumentError);
      await expect(reader.readChunk(0, -1)).rejects.toThrow(StorageArgumentError);
    } finally {
      await reader.close();
    }
  });

  it("reports a damaged or missing snapshot file with its path and index", async () => {
    const files = openFiles();
    const data = dataFor(5, 5, 4000);
    const snap = await files.store(meta, data);
    const path = files.path(snap.file);
    const damaged = Buffer.from(readFileSync(path));
    damaged[1234] = (damaged[1234] ?? 0) ^ 0x40;
    writeFileSync(path, damaged);
    expect(() => files.verify(snap)).toThrow(StorageCorruptionError);
    expect(() => files.verify(snap)).toThrow(`${path} at index 7: snapshot file checksum mismatch`);
    const reader = await files.openReader(snap);
    await reader.readChunk(0, 2000);
    await expect(reader.readChunk(2000, 2000)).rejects.toThrow(StorageCorruptionError);
    await reader.close();
    writeFileSync(path, damaged.subarray(0, 100));
    expect(() => files.check(snap)).toThrow(/holds 100 bytes, 4000 recorded/);
    await files.remove(snap.file);
    expect(() => files.check(snap)).toThrow(/missing/);
    await expect(files.openReader(snap)).rejects.toThrow(StorageCorruptionError);
  });

  it("clears leftovers but the snapshot in use", async () => {
    const files = openFiles();
    const keep = await files.store(meta, new Uint8Array(5));
    const old = await files.store({ ...meta, index: 3 }, new Uint8Array(5));
    const temp = files.tempPath();
    writeFileSync(temp, "partial");
    // What read-only opens of WAL-mode copies left beside snapshot files.
    for (const name of [`${temp}-shm`, files.path(`${keep.file}-wal`), files.path(`${old.file}-shm`)]) {
      writeFileSync(name, "");
    }
    writeFileSync(join(files.dir, "operator-notes.txt"), "not ours");
    writeFileSync(join(files.dir, "operator-notes.txt-wal"), "not ours either");
    files.removeAllBut(keep.file);
    expect(readdirSync(files.dir).sort()).toEqual(
      [keep.file, "operator-notes.txt", "operator-notes.txt-wal"].sort(),
    );
    expect(old.file).not.toBe(keep.file);
  });

  it("removes a superseded snapshot with what SQLite left beside it", async () => {
    const files = openFiles();
    const snap = await files.store(meta, new Uint8Array(5));
    writeFileSync(files.path(`${snap.file}-wal`), "");
    writeFileSync(files.path(`${snap.file}-shm`), "");
    await files.remove(snap.file);
    expect(readdirSync(files.dir)).toEqual([]);
  });
});
