import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { JOURNAL_FILES, type JournalBatch, LogJournal } from "./log-journal.js";
import { StorageCorruptionError } from "./storage-errors.js";
import { entries, hs, storageFixture } from "./test-fixtures/storage-fixture.js";

const fx = storageFixture();
const opened: LogJournal[] = [];
afterEach(() => {
  for (const j of opened.splice(0)) j.close();
});

function open(dir: string, preallocateBytes = 64 * 1024): LogJournal {
  const j = LogJournal.open(dir, { preallocateBytes });
  opened.push(j);
  return j;
}

function batch(seq: number, first: number, last: number, term = 1, size = 100): JournalBatch {
  return { seq, ops: [{ entries: entries(first, last, term, size), hardState: hs(term, "n1", first - 1) }] };
}

const seqs = (bs: readonly JournalBatch[]): number[] => bs.map((b) => b.seq);

describe("LogJournal", () => {
  it("reads back every batch, ops, hard states and entries, after reopening", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    const noop: Entry = { index: 4, term: 2, type: "noop", data: new Uint8Array(0) };
    const written: JournalBatch[] = [
      batch(1, 1, 3),
      {
        seq: 2,
        ops: [
          { entries: [noop], hardState: null },
          { entries: [], hardState: hs(2, null, 4) },
        ],
      },
      { seq: 3, ops: [{ entries: [], hardState: hs(3, "n\u00e9", 4) }] },
    ];
    for (const b of written) j.append(b);
    await j.sync("event-loop");
    j.close();
    opened.pop();
    expect(open(dir).batchesAfter(0)).toEqual(written.map((b) => expect.objectContaining(b)));
    expect(seqs(open(dir).batchesAfter(2))).toEqual([3]);
  });

  it("preallocates both files, and a restart ends every chain", async () => {
    const dir = fx.dir();
    const j = open(dir, 32 * 1024);
    for (const name of JOURNAL_FILES) expect(statSync(join(dir, name)).size).toBe(32 * 1024);
    j.restart();
    j.append(batch(1, 1, 2));
    await j.sync("event-loop");
    expect(seqs(open(dir).batchesAfter(0))).toEqual([1]);
    j.restart();
    expect(open(dir).batchesAfter(0)).toEqual([]);
  });

  it("ends the chain at a torn or garbled record, and never reads past it", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    const sizes = [1, 2, 3, 4].map((seq) => j.append(batch(seq, seq * 10, seq * 10 + 2)));
    await j.sync("event-loop");
    const path = join(dir, JOURNAL_FILES[0]);
    const bytes = readFileSync(path);
    const third = sizes[0]! + sizes[1]!;
    bytes[third + 40] = (bytes[third + 40] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    expect(seqs(open(dir).batchesAfter(0))).toEqual([1, 2]);
  });

  it("refuses to open over a damaged record that was durable before the intact one after it was written", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    const sizes: number[] = [];
    for (const seq of [1, 2, 3]) {
      sizes.push(j.append(batch(seq, seq * 10, seq * 10 + 2)));
      await j.sync("event-loop");
    }
    const path = join(dir, JOURNAL_FILES[0]);
    const bytes = readFileSync(path);
    // Record 2, fsynced before record 3 was written: no crash can have torn it, and record 3 says so.
    const second = sizes[0]!;
    bytes[second + 40] = (bytes[second + 40] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    expect(() => open(dir)).toThrow(StorageCorruptionError);
    expect(() => open(dir)).toThrow(/damaged, yet the record after it was written once it was durable/);
  });

  it("reads a record torn over a stale one of an earlier turn as a torn tail, not as damage", async () => {
    const dir = fx.dir();
    const j = open(dir, 256 * 1024);
    j.restart();
    // The earlier turn: a small record, a large one spanning pages, a small one, each fsynced.
    j.append(batch(1, 10, 12));
    await j.sync("event-loop");
    j.append(batch(2, 20, 30, 1, 2000));
    await j.sync("event-loop");
    j.append(batch(3, 40, 42));
    await j.sync("event-loop");
    const path = join(dir, JOURNAL_FILES[0]);
    const earlier = readFileSync(path);
    j.restart();
    // This turn: batch 10 as long as batch 1, so batch 11 starts where batch 2 did and ends, padded,
    // before batch 3. A crash writes batch 11's later bytes but not its first: batch 2's header over a
    // payload of both turns, and batch 3 intact after it, chained to batch 2 and flagged durable.
    const first = j.append(batch(10, 100, 102));
    await j.sync("event-loop");
    j.append(batch(11, 110, 112));
    const bytes = readFileSync(path);
    earlier.copy(bytes, first, first, first + 40);
    writeFileSync(path, bytes);
    expect(seqs(open(dir).batchesAfter(9))).toEqual([10]);
  });

  it("ends the chain at a damaged record the one after was written before any fsync of", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    const first = j.append(batch(1, 10, 12));
    await j.sync("event-loop");
    // Records 2 and 3 went to the disk together: a crash could tear 2 and keep 3.
    j.append(batch(2, 20, 22));
    j.append(batch(3, 30, 32));
    await j.sync("event-loop");
    const path = join(dir, JOURNAL_FILES[0]);
    const bytes = readFileSync(path);
    bytes[first + 40] = (bytes[first + 40] ?? 0) ^ 0xff;
    writeFileSync(path, bytes);
    expect(seqs(open(dir).batchesAfter(0))).toEqual([1]);
  });

  it("does not chain a stale record of an earlier turn that happens to follow the new ones", async () => {
    const dir = fx.dir();
    const first = open(dir);
    first.restart();
    // Batch 2 ends on a page boundary, so no padding stands between it and batch 3.
    const sizes = [first.append(batch(1, 1, 1)), first.append(batch(2, 2, 2, 1, 3848))];
    expect(sizes[0]! + sizes[1]!).toBe(4096);
    first.append(batch(3, 3, 3));
    await first.sync("event-loop");
    first.close();
    opened.pop();
    // A new turn from the start of the file: batch 1 again, then a batch 2 of the same size but other
    // contents; the old batch 3 right after it has the next sequence number but not the chain.
    const second = open(dir);
    second.restart();
    second.append(batch(1, 1, 1));
    second.append(batch(2, 2, 2, 2, 3848));
    await second.sync("event-loop");
    const read = open(dir).batchesAfter(0);
    expect(seqs(read)).toEqual([1, 2]);
    expect(read[1]!.ops[0]!.entries[0]!.term).toBe(2);
  });

  it("writes each record on to the next page boundary with zeros, and the next record over them", async () => {
    const dir = fx.dir();
    const path = join(dir, JOURNAL_FILES[0]);
    const j = open(dir);
    // Stale bytes of an earlier turn: a write that covers only part of a page leaves the rest of it.
    writeFileSync(path, Buffer.alloc(64 * 1024, 0xa5));
    j.restart();
    const first = j.append(batch(1, 1, 2));
    await j.sync("event-loop");
    let bytes = readFileSync(path);
    expect(bytes.subarray(first, 4096).every((b) => b === 0)).toBe(true);
    expect(bytes.subarray(4096, 8192).every((b) => b === 0xa5)).toBe(true);
    // The next record starts right after the first, not at the boundary, and crosses it.
    const second = j.append(batch(2, 3, 3, 1, 5000));
    await j.sync("event-loop");
    bytes = readFileSync(path);
    const end = first + second;
    expect(end).toBeGreaterThan(4096);
    expect(bytes.subarray(end, 8192).every((b) => b === 0)).toBe(true);
    expect(bytes.subarray(8192, 12288).every((b) => b === 0xa5)).toBe(true);
    expect(seqs(open(dir).batchesAfter(0))).toEqual([1, 2]);
  });

  it("switches files once the other is free, and reads the chains of both in order", async () => {
    const dir = fx.dir();
    // Half of 8 KiB: a switch is due after ~7 batches of ~560 bytes.
    const j = open(dir, 8 * 1024);
    j.restart();
    let seq = 0;
    while (!j.switchDue()) j.append(batch(++seq, seq, seq, 1, 500));
    const firstFile = seq;
    let release = (): void => undefined;
    j.switchFiles(new Promise<void>((resolve) => (release = resolve)));
    for (let i = 0; i < 10; i++) j.append(batch(++seq, seq, seq, 1, 500));
    // Past half of the second file, but the first is not free yet: writing stays where it is.
    expect(j.switchDue()).toBe(false);
    expect(() => j.switchFiles(Promise.resolve())).toThrow(/not yet durable/);
    await j.sync("event-loop");
    expect(seqs(open(dir).batchesAfter(0))).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
    expect(seqs(open(dir).batchesAfter(firstFile))[0]).toBe(firstFile + 1);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(j.switchDue()).toBe(true);
  });

  it("ignores a release that arrives after the file was freed and written again", async () => {
    const dir = fx.dir();
    const j = open(dir, 8 * 1024);
    j.restart();
    let seq = 0;
    const fill = (): void => {
      for (let i = 0; i < 40 && !j.switchDue(); i++) j.append(batch(++seq, seq, seq, 1, 500));
    };
    fill();
    let lateRelease = (): void => undefined;
    j.switchFiles(new Promise<void>((resolve) => (lateRelease = resolve)));
    // The database took a commit of its own: both files are free, writing starts over in the second.
    j.releaseAll();
    fill();
    j.switchFiles(Promise.resolve());
    await new Promise((resolve) => setImmediate(resolve));
    fill();
    // Back in the second file; the first now holds batches only a release still to come vouches for.
    j.switchFiles(new Promise<void>(() => undefined));
    lateRelease();
    await new Promise((resolve) => setImmediate(resolve));
    fill();
    expect(j.switchDue()).toBe(false);
    expect(() => j.switchFiles(Promise.resolve())).toThrow(/not yet durable/);
  });

  it("starts a new chain after releaseAll, and refuses a batch that does not follow", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    j.append(batch(1, 1, 1));
    expect(() => j.append(batch(3, 2, 2))).toThrow(/journal batch 3 does not follow batch 1/);
    j.releaseAll();
    j.append(batch(5, 2, 2));
    await j.sync("event-loop");
    expect(seqs(open(dir).batchesAfter(4))).toEqual([5]);
  });

  it("ends the chain at an entry whose data fails its own checksum, inline or written from its buffer", async () => {
    for (const size of [100, 64 * 1024]) {
      const dir = fx.dir();
      const j = open(dir, 1024 * 1024);
      j.restart();
      const sizes = [1, 2, 3].map((seq) => j.append(batch(seq, seq * 10, seq * 10 + 1, 1, size)));
      await j.sync("event-loop");
      const path = join(dir, JOURNAL_FILES[0]);
      const bytes = readFileSync(path);
      // The second record's last byte is its second entry's last byte of data, which the record's CRC
      // leaves to the entry's checksum.
      const last = sizes[0]! + sizes[1]! - 1;
      bytes[last] = (bytes[last] ?? 0) ^ 0x01;
      writeFileSync(path, bytes);
      expect(seqs(open(dir).batchesAfter(0))).toEqual([1]);
    }
  });

  it("writes an entry's data once, with the checksum it travels with", async () => {
    const dir = fx.dir();
    const j = open(dir, 1024 * 1024);
    j.restart();
    const big = batch(1, 1, 2, 1, 64 * 1024);
    j.append(big);
    await j.sync("event-loop");
    const [read] = open(dir).batchesAfter(0);
    const { checksumOfEntry } = await import("../raft/entry-checksum.js");
    const readEntries = read!.ops[0]!.entries;
    expect(readEntries.map((e) => e.data)).toEqual(big.ops[0]!.entries.map((e) => e.data));
    expect(readEntries.map(checksumOfEntry)).toEqual(big.ops[0]!.entries.map(checksumOfEntry));
  });

  it("writes a record of more pieces than one system call takes", async () => {
    const dir = fx.dir();
    const j = open(dir, 8 * 1024 * 1024);
    j.restart();
    // 1,100 entries written from their own buffers: over 2,048 pieces, past Linux's IOV_MAX of 1,024.
    const many = batch(1, 1, 1100, 1, 4096);
    j.append(many);
    j.append(batch(2, 1101, 1101));
    await j.sync("event-loop");
    const read = open(dir, 8 * 1024 * 1024).batchesAfter(0);
    expect(seqs(read)).toEqual([1, 2]);
    // As strings: toEqual walks a typed array element by element, seconds for these 4.5 MB.
    const base64 = (b: JournalBatch) => b.ops[0]!.entries.map((e) => Buffer.from(e.data).toString("base64"));
    expect(base64(read[0]!)).toEqual(base64(many));
  });

  it("reports a record whose checksums hold but whose contents make no sense", async () => {
    const dir = fx.dir();
    const j = open(dir);
    j.restart();
    j.append(batch(1, 1, 1));
    await j.sync("event-loop");
    const path = join(dir, JOURNAL_FILES[0]);
    const bytes = readFileSync(path);
    // Give the entry a kind no build writes, and fix the record's CRC up as a buggy writer would: the
    // CRC covers everything but entry data, here the 46 bytes up to the data (hard state vote "n1").
    const kindAt = 12 + 8 + 4 + 1 + 18 + 2 + 4 + 16;
    bytes[kindAt] = 0xee;
    const { crc32c } = await import("../checksum/crc32c.js");
    const dataAt = kindAt + 1 + 4 + 4;
    bytes.writeUInt32LE(crc32c(bytes.subarray(12, dataAt), bytes.readUInt32LE(8)), 4);
    writeFileSync(path, bytes);
    expect(() => open(dir)).toThrow(StorageCorruptionError);
    expect(() => open(dir)).toThrow(
      /journal record with a valid checksum is malformed: entry 1 has an unknown type/,
    );
  });

  describe("records of the earlier format (one CRC over the whole payload)", () => {
    /** A record as builds before per-entry checksums wrote it: `seq`, one op of `entries`, no hard state. */
    async function earlierRecord(
      seq: number,
      es: readonly Entry[],
      prevCrc: number,
      opCount = 1,
    ): Promise<Buffer> {
      const { crc32c } = await import("../checksum/crc32c.js");
      const { entryTypeCode } = await import("../raft/entry-type.js");
      const parts: Buffer[] = [];
      const head = Buffer.alloc(12 + 1 + 4);
      head.writeDoubleLE(seq, 0);
      head.writeUInt32LE(opCount, 8);
      head.writeUInt8(0, 12);
      head.writeUInt32LE(es.length, 13);
      parts.push(head);
      for (const e of es) {
        const h = Buffer.alloc(21);
        h.writeDoubleLE(e.index, 0);
        h.writeDoubleLE(e.term, 8);
        h.writeUInt8(entryTypeCode(e.type), 16);
        h.writeUInt32LE(e.data.byteLength, 17);
        parts.push(h, Buffer.from(e.data));
      }
      const payload = Buffer.concat(parts);
      const header = Buffer.alloc(12);
      header.writeUInt32LE(payload.byteLength, 0);
      header.writeUInt32LE(crc32c(payload, prevCrc), 4);
      header.writeUInt32LE(prevCrc, 8);
      return Buffer.concat([header, payload]);
    }

    it("reads them, and ends the chain at one whose CRC fails", async () => {
      const dir = fx.dir();
      open(dir).restart();
      const path = join(dir, JOURNAL_FILES[0]);
      const first = await earlierRecord(1, entries(1, 2, 1, 5000), 7);
      const second = await earlierRecord(2, entries(3, 3, 1), first.readUInt32LE(4));
      const bytes = readFileSync(path);
      Buffer.concat([first, second]).copy(bytes, 0);
      writeFileSync(path, bytes);
      const read = open(dir).batchesAfter(0);
      expect(seqs(read)).toEqual([1, 2]);
      expect(read[0]!.ops[0]!.entries).toEqual(entries(1, 2, 1, 5000));
      // A flipped byte of entry data: that record's CRC fails and the chain ends before it.
      bytes[first.length + 12 + 17 + 21] = (bytes[first.length + 12 + 17 + 21] ?? 0) ^ 0x01;
      writeFileSync(path, bytes);
      expect(seqs(open(dir).batchesAfter(0))).toEqual([1]);
    });

    it("reports one whose checksum holds but whose contents do not parse", async () => {
      const dir = fx.dir();
      open(dir).restart();
      const path = join(dir, JOURNAL_FILES[0]);
      const bytes = readFileSync(path);
      // One op more than the record holds, under a CRC that holds.
      (await earlierRecord(1, entries(1, 1, 1), 0, 2)).copy(bytes, 0);
      writeFileSync(path, bytes);
      expect(() => open(dir)).toThrow(StorageCorruptionError);
      expect(() => open(dir)).toThrow(/journal record with a valid checksum is malformed: it ends early/);
    });
  });
});
