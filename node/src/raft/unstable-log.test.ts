import { describe, expect, it } from "vitest";
import { RaftInvariantError } from "./errors.js";
import { entriesWithTerms, entry } from "./test-fixtures/helpers.js";
import type { Snapshot } from "./types.js";
import { UnstableLog } from "./unstable-log.js";

const snap = (index: number, term: number): Snapshot => ({
  meta: { index, term, conf: { voters: ["a"] } },
  size: 0,
  checksum: 0,
});

const shape = (u: UnstableLog): string[] => u.entries.map((e) => `${e.index}@${e.term}`);

describe("UnstableLog", () => {
  it("is empty at first: no last index, no terms", () => {
    const u = new UnstableLog(6);
    expect(u.lastIndex()).toBeNull();
    expect(u.term(5)).toBeNull();
    expect(u.term(6)).toBeNull();
  });

  it("answers terms of its entries and of its snapshot's last entry", () => {
    const u = new UnstableLog(6);
    u.truncateAndAppend(entriesWithTerms([2, 3], 6));
    expect(u.lastIndex()).toBe(7);
    expect(u.term(6)).toBe(2);
    expect(u.term(7)).toBe(3);
    expect(u.term(8)).toBeNull();
    expect(u.term(5)).toBeNull();
    u.restore(snap(10, 4));
    expect(u.term(10)).toBe(4);
    expect(u.term(9)).toBeNull();
    expect(u.lastIndex()).toBe(10);
  });

  describe("truncateAndAppend", () => {
    it("appends directly after the last entry", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1], 5));
      u.truncateAndAppend(entriesWithTerms([2], 7));
      expect(u.offset).toBe(5);
      expect(shape(u)).toEqual(["5@1", "6@1", "7@2"]);
    });

    it("replaces everything when the new entries start at or before the offset", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1, 1], 5));
      u.truncateAndAppend(entriesWithTerms([3, 3], 5));
      expect(u.offset).toBe(5);
      expect(shape(u)).toEqual(["5@3", "6@3"]);
      u.truncateAndAppend(entriesWithTerms([4], 3));
      expect(u.offset).toBe(3);
      expect(shape(u)).toEqual(["3@4"]);
      expect(u.lastIndex()).toBe(3);
    });

    it("truncates a suffix when the new entries start inside the unstable part", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1, 1, 1], 5));
      u.truncateAndAppend(entriesWithTerms([2, 2], 7));
      expect(u.offset).toBe(5);
      expect(shape(u)).toEqual(["5@1", "6@1", "7@2", "8@2"]);
    });

    it("ignores an empty batch", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1], 5));
      u.truncateAndAppend([]);
      expect(shape(u)).toEqual(["5@1"]);
    });

    it("does not alias the caller's array", () => {
      const u = new UnstableLog(5);
      const batch = entriesWithTerms([1, 1], 5);
      u.truncateAndAppend(batch);
      batch.push(entry(7, 1));
      expect(u.lastIndex()).toBe(6);
    });
  });

  describe("stableTo", () => {
    it("drops entries up to the index when the term still matches", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1, 2], 5));
      u.stableTo(6, 1);
      expect(u.offset).toBe(7);
      expect(shape(u)).toEqual(["7@2"]);
    });

    it("ignores an entry that was replaced meanwhile (term differs)", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1], 5));
      u.truncateAndAppend(entriesWithTerms([3], 6));
      u.stableTo(6, 1);
      expect(u.offset).toBe(5);
      expect(shape(u)).toEqual(["5@1", "6@3"]);
    });

    it("ignores an entry that was truncated away (no longer present)", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1, 1, 1], 5));
      u.truncateAndAppend(entriesWithTerms([2], 5));
      u.stableTo(7, 1);
      expect(shape(u)).toEqual(["5@2"]);
    });

    it("ignores indexes below the offset", () => {
      const u = new UnstableLog(5);
      u.truncateAndAppend(entriesWithTerms([1], 5));
      u.stableTo(4, 1);
      expect(u.offset).toBe(5);
      expect(shape(u)).toEqual(["5@1"]);
    });
  });

  it("stableSnapTo drops only the matching snapshot", () => {
    const u = new UnstableLog(1);
    u.restore(snap(10, 2));
    u.stableSnapTo(9);
    expect(u.snapshot).not.toBeNull();
    u.stableSnapTo(10);
    expect(u.snapshot).toBeNull();
  });

  it("restore discards entries and moves the offset past the snapshot", () => {
    const u = new UnstableLog(5);
    u.truncateAndAppend(entriesWithTerms([1, 1], 5));
    u.restore(snap(20, 3));
    expect(u.offset).toBe(21);
    expect(u.entries).toEqual([]);
    u.truncateAndAppend(entriesWithTerms([3], 21));
    expect(u.lastIndex()).toBe(21);
  });

  it("slice returns a range and refuses one outside the unstable part", () => {
    const u = new UnstableLog(5);
    u.truncateAndAppend(entriesWithTerms([1, 1, 1], 5));
    expect(u.slice(6, 8).map((e) => e.index)).toEqual([6, 7]);
    expect(u.slice(5, 5)).toEqual([]);
    expect(() => u.slice(4, 6)).toThrow(RaftInvariantError);
    expect(() => u.slice(6, 9)).toThrow(RaftInvariantError);
  });
});
