import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { entryChecksum } from "../raft/entry-checksum.js";
import { entryTypeCode, entryTypeOf } from "../raft/entry-type.js";
import { entrySize } from "../raft/log-storage.js";
import type { Entry } from "../raft/types.js";
import { EntryCache } from "./entry-cache.js";
import { LogIndex } from "./log-index.js";
import { SnapshotPolicy } from "./snapshot-policy.js";
import { StorageArgumentError } from "./storage-errors.js";

const text = (s: string) => new TextEncoder().encode(s);

describe("crc32c", () => {
  it("matches the published check values", () => {
    expect(crc32c(text("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it("agrees with the bit-at-a-time definition at every length and byte offset", () => {
    const bitwise = (data: Uint8Array): number => {
      let c = 0xffffffff;
      for (const byte of data) {
        c ^= byte;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      }
      return ~c >>> 0;
    };
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300, size: "max" }), fc.nat(15), (bytes, offset) => {
        const data = new Uint8Array(offset + bytes.length).subarray(offset);
        data.set(bytes);
        expect(crc32c(data)).toBe(bitwise(data));
      }),
    );
  });

  it("chains over pieces as over the whole", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300, size: "max" }), fc.nat(300), (data, cut) => {
        const at = Math.min(cut, data.length);
        expect(crc32c(data.subarray(at), crc32c(data.subarray(0, at)))).toBe(crc32c(data));
      }),
    );
  });
});

describe("entryChecksum", () => {
  it("covers index, term, type and data", () => {
    const data = text("payload");
    const base = entryChecksum(5, 2, 0, data);
    expect(entryChecksum(6, 2, 0, data)).not.toBe(base);
    expect(entryChecksum(5, 3, 0, data)).not.toBe(base);
    expect(entryChecksum(5, 2, 1, data)).not.toBe(base);
    expect(entryChecksum(5, 2, 0, text("payloae"))).not.toBe(base);
    expect(entryChecksum(5 + 2 ** 32, 2, 0, data)).not.toBe(base);
  });

  it("round-trips entry types and rejects unknown codes", () => {
    expect(entryTypeOf(entryTypeCode("normal"))).toBe("normal");
    expect(entryTypeOf(entryTypeCode("noop"))).toBe("noop");
    expect(entryTypeOf(entryTypeCode("conf"))).toBe("conf");
    expect(entryTypeOf(7)).toBeNull();
  });
});

describe("LogIndex", () => {
  it("answers terms and sizes like a plain list under random appends, truncations and compactions", () => {
    // Mostly appends, so the log outgrows the initial size table and compaction reclaims it.
    const op = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({ t: fc.constant("append" as const), term: fc.nat(2), size: fc.nat(50) }),
      },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("truncate" as const), back: fc.nat(5) }) },
      { weight: 1, arbitrary: fc.record({ t: fc.constant("compact" as const), back: fc.nat(400) }) },
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 200, maxLength: 3000 }), (ops) => {
        const index = new LogIndex(0, 0);
        // model[i] = entry at position start + i (model[0] stands for the compaction point).
        let start = 0;
        let model: Entry[] = [{ index: 0, term: 0, type: "noop", data: new Uint8Array() }];
        for (const o of ops) {
          const last = start + model.length - 1;
          if (o.t === "append") {
            const term = model[model.length - 1]!.term + o.term;
            const e: Entry = { index: last + 1, term, type: "normal", data: new Uint8Array(o.size) };
            model.push(e);
            index.append(e);
          } else if (o.t === "truncate") {
            const from = Math.max(start + 1, last + 1 - o.back);
            model = model.slice(0, from - start);
            index.truncateFrom(from);
          } else {
            const to = Math.max(start, last - o.back);
            model = model.slice(to - start);
            start = to;
            index.compactTo(to);
          }
        }
        expect(index.startIndex).toBe(start);
        expect(index.lastIndex).toBe(start + model.length - 1);
        let total = 0;
        for (let i = 0; i < model.length; i++) {
          expect(index.term(start + i)).toBe(model[i]!.term);
          if (i > 0) total += entrySize(model[i]!);
          expect(index.bytes(start + 1, start + i + 1)).toBe(total);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe("EntryCache", () => {
  const e = (index: number, size = 10): Entry => ({
    index,
    term: 1,
    type: "normal",
    data: new Uint8Array(size),
  });

  it("keeps the newest entries within its entry and byte bounds", () => {
    const cache = new EntryCache(5, 1000, 1);
    for (let i = 1; i <= 20; i++) cache.append(e(i));
    expect(cache.firstIndex).toBe(16);
    expect(cache.length).toBe(5);
    expect(cache.slice(16, 21).map((x) => x.index)).toEqual([16, 17, 18, 19, 20]);
    const bytes = new EntryCache(100, 100, 1);
    for (let i = 1; i <= 20; i++) bytes.append(e(i, 26));
    expect(bytes.length).toBe(2);
    expect(bytes.byteSize).toBe(100);
    bytes.append(e(21, 500));
    expect(bytes.length).toBe(0);
    expect(bytes.firstIndex).toBe(22);
  });

  it("follows truncations and compactions", () => {
    const cache = new EntryCache(5000, 1e9, 1);
    for (let i = 1; i <= 3000; i++) cache.append(e(i));
    cache.dropTo(2000);
    expect(cache.firstIndex).toBe(2001);
    cache.truncateFrom(2500);
    expect(cache.length).toBe(499);
    expect(cache.byteSize).toBe(499 * 34);
    cache.truncateFrom(100);
    expect(cache.length).toBe(0);
    expect(cache.firstIndex).toBe(100);
    cache.append(e(100));
    cache.dropTo(500);
    expect(cache.firstIndex).toBe(501);
    expect(cache.length).toBe(0);
  });
});

describe("SnapshotPolicy", () => {
  const log = (snapshot: number, first: number, bytesPerEntry: number) => ({
    snapshotIndex: () => snapshot,
    firstIndex: () => first,
    byteSize: (lo: number, hi: number) => (hi - lo) * bytesPerEntry,
  });

  it("is due by entries or by bytes, whichever comes first", () => {
    const p = new SnapshotPolicy({ entries: 100, bytes: 5000, retainEntries: 10 });
    expect(p.due(log(0, 1, 10), 99)).toBe(false);
    expect(p.due(log(0, 1, 10), 100)).toBe(true);
    expect(p.due(log(0, 1, 100), 50)).toBe(true);
    expect(p.due(log(0, 1, 100), 49)).toBe(false);
    expect(p.due(log(500, 400, 1000), 500)).toBe(false);
    expect(p.compactionIndex(500)).toBe(490);
    expect(p.compactionIndex(5)).toBe(0);
  });

  it("rejects invalid limits", () => {
    expect(() => new SnapshotPolicy({ entries: 0, bytes: 1, retainEntries: 0 })).toThrow(
      StorageArgumentError,
    );
    expect(() => new SnapshotPolicy({ entries: 1, bytes: 1.5, retainEntries: 0 })).toThrow(
      StorageArgumentError,
    );
    expect(() => new SnapshotPolicy({ entries: 1, bytes: 1, retainEntries: -1 })).toThrow(
      StorageArgumentError,
    );
  });
});
