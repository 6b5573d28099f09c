import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import {
  LogCompactedError,
  LogUnavailableError,
  RaftError,
  RaftInvariantError,
  SnapshotOutOfDateError,
} from "./errors.js";
import { entrySize, limitSize } from "./log-storage.js";
import { MemoryStorage } from "./memory-storage.js";
import { entriesWithTerms, entry } from "./test-fixtures/helpers.js";

const conf = { voters: ["a", "b", "c"] };

function withLog(terms: number[]): MemoryStorage {
  const s = new MemoryStorage(conf);
  s.append(entriesWithTerms(terms));
  return s;
}

function catchError(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error("expected a throw");
}

describe("MemoryStorage", () => {
  it("starts empty: firstIndex 1, lastIndex 0, term(0) = 0, zero hard state", () => {
    const s = new MemoryStorage(conf);
    expect(s.firstIndex()).toBe(1);
    expect(s.lastIndex()).toBe(0);
    expect(s.term(0)).toBe(0);
    expect(s.initialState()).toEqual({ hardState: { term: 0, vote: null, commit: 0 }, conf });
    expect(s.snapshot().meta).toEqual({ index: 0, term: 0, conf });
  });

  it("stores and returns the hard state", () => {
    const s = new MemoryStorage(conf);
    s.setHardState({ term: 4, vote: "b", commit: 0 });
    expect(s.initialState().hardState).toEqual({ term: 4, vote: "b", commit: 0 });
  });

  it("appends and reads entries back", () => {
    const s = withLog([1, 1, 2]);
    expect(s.lastIndex()).toBe(3);
    expect(s.term(3)).toBe(2);
    expect(s.entries(1, 4, Number.MAX_SAFE_INTEGER).map((e) => e.index)).toEqual([1, 2, 3]);
    expect(s.entries(2, 3, Number.MAX_SAFE_INTEGER).map((e) => e.index)).toEqual([2]);
  });

  it("an append at an existing index replaces that entry and everything after it", () => {
    const s = withLog([1, 1, 1, 1]);
    s.append([entry(3, 2, "x")]);
    expect(s.lastIndex()).toBe(3);
    expect(s.term(3)).toBe(2);
    expect(s.term(2)).toBe(1);
  });

  it("refuses an append that would leave a gap", () => {
    const s = withLog([1, 1]);
    expect(() => s.append([entry(4, 1)])).toThrow(RaftInvariantError);
    expect(s.lastIndex()).toBe(2);
  });

  it("an empty append changes nothing", () => {
    const s = withLog([1, 1]);
    s.append([]);
    expect(s.lastIndex()).toBe(2);
  });

  it("limits entries by bytes but always returns at least one", () => {
    const s = new MemoryStorage(conf);
    s.append([entry(1, 1, "aaaaaaaaaa"), entry(2, 1, "bbbbbbbbbb"), entry(3, 1, "cccccccccc")]);
    const one = entrySize(s.entries(1, 2, 1e9)[0]!); // 34 bytes
    expect(s.entries(1, 4, 0).map((e) => e.index)).toEqual([1]);
    expect(s.entries(1, 4, one).map((e) => e.index)).toEqual([1]);
    expect(s.entries(1, 4, 2 * one).map((e) => e.index)).toEqual([1, 2]);
    expect(s.entries(1, 4, 2 * one + 1).map((e) => e.index)).toEqual([1, 2]);
    expect(s.entries(1, 4, 3 * one).map((e) => e.index)).toEqual([1, 2, 3]);
  });

  it("reports reads beyond the log with a typed LogUnavailableError", () => {
    const s = withLog([1, 1]);
    const err = catchError(() => s.term(3));
    expect(err).toBeInstanceOf(LogUnavailableError);
    expect(err).toBeInstanceOf(RaftError);
    expect((err as RaftError).code).toBe("RaftLogUnavailable");
    expect(() => s.entries(1, 4, 100)).toThrow(LogUnavailableError);
  });

  describe("snapshots and compaction", () => {
    it("createSnapshot records the index, its term and the data", () => {
      const s = withLog([1, 2, 2, 3]);
      const data = new Uint8Array([1, 2, 3]);
      const snap = s.createSnapshot(3, conf, data);
      expect(snap.meta).toEqual({ index: 3, term: 2, conf });
      expect(s.snapshot()).toBe(snap);
      // Creating a snapshot does not compact by itself.
      expect(s.firstIndex()).toBe(1);
    });

    it("createSnapshot refuses old or unavailable indexes with typed errors", () => {
      const s = withLog([1, 1, 1]);
      s.createSnapshot(2, conf, new Uint8Array());
      const old = catchError(() => s.createSnapshot(2, conf, new Uint8Array()));
      expect(old).toBeInstanceOf(SnapshotOutOfDateError);
      expect((old as RaftError).code).toBe("RaftSnapshotOutOfDate");
      expect(() => s.createSnapshot(1, conf, new Uint8Array())).toThrow(SnapshotOutOfDateError);
      expect(() => s.createSnapshot(4, conf, new Uint8Array())).toThrow(LogUnavailableError);
    });

    it("compact drops entries up to the index but keeps its term answerable", () => {
      const s = withLog([1, 1, 2, 2, 3]);
      s.createSnapshot(3, conf, new Uint8Array());
      s.compact(3);
      expect(s.firstIndex()).toBe(4);
      expect(s.lastIndex()).toBe(5);
      expect(s.term(3)).toBe(2);
      expect(s.term(4)).toBe(2);
      const err = catchError(() => s.term(2));
      expect(err).toBeInstanceOf(LogCompactedError);
      expect((err as RaftError).code).toBe("RaftLogCompacted");
      expect(() => s.entries(3, 5, 100)).toThrow(LogCompactedError);
      expect(s.entries(4, 6, 1e9).map((e) => e.index)).toEqual([4, 5]);
    });

    it("compact refuses to pass the snapshot, and ignores already compacted indexes", () => {
      const s = withLog([1, 1, 1, 1]);
      s.createSnapshot(2, conf, new Uint8Array());
      expect(() => s.compact(3)).toThrow(RaftInvariantError);
      expect(s.firstIndex()).toBe(1);
      s.compact(2);
      s.compact(1);
      s.compact(2);
      expect(s.firstIndex()).toBe(3);
      expect(s.lastIndex()).toBe(4);
    });

    it("appending entries the snapshot covers skips them", () => {
      const s = withLog([1, 1, 1, 1]);
      s.createSnapshot(3, conf, new Uint8Array());
      s.compact(3);
      s.append(entriesWithTerms([1, 1, 1, 1, 2], 1));
      expect(s.firstIndex()).toBe(4);
      expect(s.lastIndex()).toBe(5);
      expect(s.term(5)).toBe(2);
      s.append(entriesWithTerms([1, 1]));
      expect(s.lastIndex()).toBe(5);
    });

    it("applySnapshot replaces the whole log", () => {
      const s = withLog([1, 1, 1]);
      const data = new Uint8Array([9]);
      const snap = { meta: { index: 10, term: 4, conf }, size: 1, checksum: crc32c(data) };
      s.applySnapshot(snap, data);
      expect(s.snapshot()).toBe(snap);
      expect(s.snapshotData()).toBe(data);
      expect(s.firstIndex()).toBe(11);
      expect(s.lastIndex()).toBe(10);
      expect(s.term(10)).toBe(4);
      expect(() => s.term(3)).toThrow(LogCompactedError);
      s.append([entry(11, 4)]);
      expect(s.lastIndex()).toBe(11);
    });

    it("applySnapshot refuses a snapshot that is not newer", () => {
      const s = new MemoryStorage(conf);
      const none = new Uint8Array();
      s.applySnapshot({ meta: { index: 5, term: 2, conf }, size: 0, checksum: 0 }, none);
      expect(() =>
        s.applySnapshot({ meta: { index: 5, term: 2, conf }, size: 0, checksum: 0 }, none),
      ).toThrow(SnapshotOutOfDateError);
      expect(() =>
        s.applySnapshot({ meta: { index: 3, term: 2, conf }, size: 0, checksum: 0 }, none),
      ).toThrow(SnapshotOutOfDateError);
      expect(s.snapshot().meta.index).toBe(5);
    });

    it("applySnapshot refuses bytes that do not match the snapshot's size and checksum", () => {
      const s = new MemoryStorage(conf);
      const data = new Uint8Array([1, 2, 3]);
      const snap = { meta: { index: 5, term: 2, conf }, size: 3, checksum: crc32c(data) };
      expect(() => s.applySnapshot(snap, new Uint8Array([1, 2, 4]))).toThrow(RaftInvariantError);
      expect(() => s.applySnapshot(snap, new Uint8Array([1, 2]))).toThrow(RaftInvariantError);
      expect(s.snapshot().meta.index).toBe(0);
      s.applySnapshot(snap, data);
      expect(s.snapshot().meta.index).toBe(5);
    });
  });
});

describe("limitSize / entrySize", () => {
  it("counts data bytes plus a fixed overhead", () => {
    expect(entrySize(entry(1, 1, ""))).toBe(24);
    expect(entrySize(entry(1, 1, "abcd"))).toBe(28);
  });

  it("keeps the longest prefix within the budget, never empty", () => {
    const es = [entry(1, 1, "aaaaaa"), entry(2, 1, "aaaaaa"), entry(3, 1, "aaaaaa")]; // 30 each
    expect(limitSize([], 0)).toEqual([]);
    expect(limitSize(es, 0).length).toBe(1);
    expect(limitSize(es, 59).length).toBe(1);
    expect(limitSize(es, 60).length).toBe(2);
    expect(limitSize(es, 90).length).toBe(3);
    expect(limitSize(es, 1e9)).toBe(es);
  });
});
