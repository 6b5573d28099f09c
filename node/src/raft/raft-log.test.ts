import { describe, expect, it } from "vitest";
import { LogCompactedError, LogUnavailableError, RaftInvariantError } from "./errors.js";
import { entrySize } from "./log-storage.js";
import { MemoryStorage } from "./memory-storage.js";
import { RaftLog } from "./raft-log.js";
import { entriesWithTerms, entry } from "./test-fixtures/helpers.js";
import type { Entry } from "./types.js";

const conf = { voters: ["a", "b", "c"] };
const BIG = Number.MAX_SAFE_INTEGER;

/** A log whose first `stored` terms are in storage and the rest in the unstable tail. */
function makeLog(terms: number[], stored = terms.length, applied = 0): RaftLog {
  const storage = new MemoryStorage(conf);
  storage.append(entriesWithTerms(terms.slice(0, stored)));
  const log = new RaftLog(storage, applied);
  const rest = entriesWithTerms(terms.slice(stored), stored + 1);
  if (rest.length > 0) log.append(rest);
  return log;
}

const idx = (es: readonly Entry[]): number[] => es.map((e) => e.index);

describe("RaftLog", () => {
  it("an empty log: first 1, last 0, last term 0, nothing committed", () => {
    const log = makeLog([]);
    expect(log.firstIndex()).toBe(1);
    expect(log.lastIndex()).toBe(0);
    expect(log.lastTerm()).toBe(0);
    expect(log.committed).toBe(0);
    expect(log.term(0)).toBe(0);
    expect(log.term(1)).toBeNull();
  });

  describe("term lookup", () => {
    it("reads stored and unstable entries, and null beyond the log", () => {
      const log = makeLog([1, 1, 2, 3, 3], 3);
      expect([1, 2, 3, 4, 5].map((i) => log.term(i))).toEqual([1, 1, 2, 3, 3]);
      expect(log.lastIndex()).toBe(5);
      expect(log.lastTerm()).toBe(3);
      expect(log.term(6)).toBeNull();
    });

    it("hides stored entries an unstable append is replacing", () => {
      const log = makeLog([1, 1, 1, 1]);
      log.append([entry(3, 2)]);
      expect(log.term(2)).toBe(1);
      expect(log.term(3)).toBe(2);
      expect(log.term(4)).toBeNull();
      expect(log.lastIndex()).toBe(3);
    });

    it("answers the compaction point's term and null below it", () => {
      const storage = new MemoryStorage(conf);
      storage.append(entriesWithTerms([1, 2, 2, 3]));
      storage.createSnapshot(2, conf, new Uint8Array());
      storage.compact(2);
      const log = new RaftLog(storage, 0);
      expect(log.firstIndex()).toBe(3);
      expect(log.committed).toBe(2);
      expect(log.applied).toBe(2);
      expect(log.term(2)).toBe(2);
      expect(log.term(1)).toBeNull();
      expect(log.term(4)).toBe(3);
    });

    it("after restoring a snapshot answers only its last term and what follows", () => {
      const log = makeLog([1, 1, 1]);
      log.restore({ meta: { index: 10, term: 5, conf }, size: 0, checksum: 0 });
      expect(log.firstIndex()).toBe(11);
      expect(log.lastIndex()).toBe(10);
      expect(log.term(10)).toBe(5);
      expect(log.term(3)).toBeNull();
      expect(log.term(9)).toBeNull();
      expect(log.committed).toBe(10);
      expect(log.snapshot()?.meta.index).toBe(10);
      log.append([entry(11, 5)]);
      expect(log.term(11)).toBe(5);
    });
  });

  it("isUpToDate: later last term wins; same term needs at least the same length", () => {
    const log = makeLog([1, 2, 2]);
    expect(log.isUpToDate(1, 3)).toBe(true);
    expect(log.isUpToDate(3, 2)).toBe(true);
    expect(log.isUpToDate(4, 2)).toBe(true);
    expect(log.isUpToDate(2, 2)).toBe(false);
    expect(log.isUpToDate(10, 1)).toBe(false);
  });

  describe("findConflict", () => {
    const log = makeLog([1, 1, 2, 2], 2);
    it.each([
      ["no entries", [], 0],
      ["all matching", entriesWithTerms([1, 2], 2), 0],
      ["matching then new", entriesWithTerms([2, 2, 3], 3), 5],
      ["only new", entriesWithTerms([3], 5), 5],
      ["conflict in storage", entriesWithTerms([1, 3], 1), 2],
      ["conflict in the unstable tail", entriesWithTerms([2, 3, 3], 3), 4],
    ])("%s", (_name, entries, expected) => {
      expect(log.findConflict(entries as Entry[])).toBe(expected);
    });
  });

  describe("findConflictByTerm", () => {
    const log = makeLog([1, 1, 2, 2, 5, 5, 5], 4);
    it.each([
      [7, 5, 7, 5],
      [7, 4, 4, 2],
      [7, 2, 4, 2],
      [3, 1, 2, 1],
      [7, 0, 0, 0],
      [100, 3, 4, 2],
      [100, 9, 7, 5],
    ])("(index %i, term %i) -> (%i, %i)", (index, term, eIndex, eTerm) => {
      expect(log.findConflictByTerm(index, term)).toEqual({ index: eIndex, term: eTerm });
    });

    it("stops at the compaction point with term 0 when it cannot see further", () => {
      const storage = new MemoryStorage(conf);
      storage.append(entriesWithTerms([1, 1, 3, 3, 3]));
      storage.createSnapshot(3, conf, new Uint8Array());
      storage.compact(3);
      const compacted = new RaftLog(storage, 0);
      // The compaction point (3, term 3) is visible; below it nothing is.
      expect(compacted.findConflictByTerm(5, 2)).toEqual({ index: 2, term: 0 });
      expect(compacted.findConflictByTerm(5, 3)).toEqual({ index: 5, term: 3 });
    });
  });

  describe("slice", () => {
    const size = entrySize(entry(1, 1, "e1")); // every test entry has the same size

    it("reads across the storage / unstable boundary", () => {
      const log = makeLog([1, 1, 1, 2, 2, 2], 3);
      expect(idx(log.slice(1, 7, BIG))).toEqual([1, 2, 3, 4, 5, 6]);
      expect(idx(log.slice(2, 4, BIG))).toEqual([2, 3]);
      expect(idx(log.slice(4, 6, BIG))).toEqual([4, 5]);
      expect(idx(log.slice(3, 5, BIG))).toEqual([3, 4]);
      expect(log.slice(4, 4, BIG)).toEqual([]);
    });

    it("respects maxBytes across the boundary and returns at least one entry", () => {
      const log = makeLog([1, 1, 1, 2, 2, 2], 3);
      expect(idx(log.slice(1, 7, 0))).toEqual([1]);
      expect(idx(log.slice(2, 7, 2 * size))).toEqual([2, 3]);
      expect(idx(log.slice(2, 7, 3 * size))).toEqual([2, 3, 4]);
      expect(idx(log.slice(3, 7, 3 * size + 1))).toEqual([3, 4, 5]);
      expect(idx(log.slice(5, 7, size))).toEqual([5]);
      expect(idx(log.slice(4, 7, 0))).toEqual([4]);
    });

    it("throws typed errors below the first index and beyond the last", () => {
      const storage = new MemoryStorage(conf);
      storage.append(entriesWithTerms([1, 1, 1, 1]));
      storage.createSnapshot(2, conf, new Uint8Array());
      storage.compact(2);
      const log = new RaftLog(storage, 0);
      expect(() => log.slice(2, 4, BIG)).toThrow(LogCompactedError);
      expect(() => log.slice(3, 6, BIG)).toThrow(LogUnavailableError);
      expect(idx(log.slice(3, 5, BIG))).toEqual([3, 4]);
    });

    it("does not read stale stored entries that the unstable tail replaces", () => {
      const log = makeLog([1, 1, 1, 1, 1]);
      log.append([entry(3, 2, "new")]);
      const got = log.slice(1, 4, BIG);
      expect(got.map((e) => `${e.index}@${e.term}`)).toEqual(["1@1", "2@1", "3@2"]);
      expect(() => log.slice(1, 5, BIG)).toThrow(LogUnavailableError);
    });
  });

  describe("maybeAppend", () => {
    it("refuses when the previous entry does not match (missing or different term)", () => {
      const log = makeLog([1, 1, 2]);
      expect(log.maybeAppend(4, 2, 0, entriesWithTerms([2], 5))).toBeNull();
      expect(log.maybeAppend(3, 1, 0, entriesWithTerms([2], 4))).toBeNull();
      expect(log.lastIndex()).toBe(3);
    });

    it("appends after a match and returns the last new index", () => {
      const log = makeLog([1, 1, 2]);
      expect(log.maybeAppend(3, 2, 0, entriesWithTerms([2, 3], 4))).toBe(5);
      expect(log.lastIndex()).toBe(5);
      expect(log.term(5)).toBe(3);
    });

    it("keeps a longer log when the new entries all match (no truncation without conflict)", () => {
      const log = makeLog([1, 1, 2, 2, 2]);
      expect(log.maybeAppend(1, 1, 0, entriesWithTerms([1, 2], 2))).toBe(3);
      expect(log.lastIndex()).toBe(5);
    });

    it("truncates a conflicting suffix and replaces it", () => {
      const log = makeLog([1, 1, 2, 2, 2], 3);
      expect(log.maybeAppend(2, 1, 0, entriesWithTerms([2, 4], 3))).toBe(4);
      expect(log.lastIndex()).toBe(4);
      expect([1, 2, 3, 4].map((i) => log.term(i))).toEqual([1, 1, 2, 4]);
      expect(log.term(5)).toBeNull();
    });

    it("commits min(leader commit, last new entry)", () => {
      const log = makeLog([1, 1, 1, 1, 1]);
      log.maybeAppend(1, 1, 5, entriesWithTerms([1], 2));
      expect(log.committed).toBe(2);
      log.maybeAppend(2, 1, 1, entriesWithTerms([1], 3));
      expect(log.committed).toBe(2);
      log.maybeAppend(3, 1, 3, []);
      expect(log.committed).toBe(3);
    });

    it("throws rather than overwrite a committed entry", () => {
      const log = makeLog([1, 1, 1]);
      log.commitTo(3);
      expect(() => log.maybeAppend(1, 1, 3, entriesWithTerms([2], 2))).toThrow(RaftInvariantError);
      expect(log.term(2)).toBe(1);
    });
  });

  it("commitTo never goes backwards and refuses to pass the last index", () => {
    const log = makeLog([1, 1, 1]);
    expect(log.commitTo(2)).toBe(true);
    expect(log.commitTo(1)).toBe(false);
    expect(log.committed).toBe(2);
    expect(log.commitTo(2)).toBe(false);
    expect(() => log.commitTo(4)).toThrow(RaftInvariantError);
    expect(log.committed).toBe(2);
  });

  it("append refuses to rewrite committed entries", () => {
    const log = makeLog([1, 1, 1]);
    log.commitTo(2);
    expect(() => log.append([entry(2, 5)])).toThrow(RaftInvariantError);
    expect(log.append([entry(3, 5)])).toBe(3);
    expect(log.append([])).toBe(3);
  });

  it("hands out committed entries from applying+1 to committed, bounded by bytes", () => {
    const log = makeLog([1, 1, 1, 1, 1], 2, 1);
    expect(log.applied).toBe(1);
    expect(log.hasNextCommittedEntries()).toBe(false);
    log.commitTo(4);
    expect(log.hasNextCommittedEntries()).toBe(true);
    expect(idx(log.nextCommittedEntries(BIG))).toEqual([2, 3, 4]);
    expect(idx(log.nextCommittedEntries(0))).toEqual([2]);
    log.applying = 4;
    expect(log.hasNextCommittedEntries()).toBe(false);
    expect(log.nextCommittedEntries(BIG)).toEqual([]);
  });

  it("hands out no committed entries while a snapshot is unstable", () => {
    const log = makeLog([1, 1]);
    log.restore({ meta: { index: 5, term: 1, conf }, size: 0, checksum: 0 });
    log.append([entry(6, 1)]);
    log.commitTo(6);
    expect(log.hasNextCommittedEntries()).toBe(false);
    log.unstable.stableSnapTo(5);
    expect(log.hasNextCommittedEntries()).toBe(true);
  });
});
