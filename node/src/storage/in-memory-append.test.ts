import { describe, expect, it } from "vitest";
import { EntryCache } from "./entry-cache.js";
import { appendInMemory } from "./in-memory-append.js";
import { LogIndex } from "./log-index.js";
import { entries } from "./test-fixtures/storage-fixture.js";

/** An index and cache compacted to `start` (term 1) and holding entries (start, last] of term 1. */
function log(start: number, last: number) {
  const index = new LogIndex(start, 1);
  const cache = new EntryCache(1000, 1 << 20, start + 1);
  for (const e of entries(start + 1, last, 1)) {
    index.append(e);
    cache.append(e);
  }
  return { index, cache };
}

const terms = (index: LogIndex): number[] => {
  const out: number[] = [];
  for (let i = index.firstIndex; i <= index.lastIndex; i++) out.push(index.term(i));
  return out;
};

describe("appendInMemory", () => {
  it("appends after the last entry, replacing nothing", () => {
    const { index, cache } = log(0, 3);
    const added = entries(4, 5, 2);
    const { kept, truncates } = appendInMemory(index, cache, added);
    expect(kept).toBe(added);
    expect(truncates).toBe(false);
    expect(terms(index)).toEqual([1, 1, 1, 2, 2]);
    expect(cache.slice(4, 6)).toEqual(added);
  });

  it("replaces the entries from the first one's index on, in the index and the cache", () => {
    const { index, cache } = log(0, 5);
    const { kept, truncates } = appendInMemory(index, cache, entries(3, 3, 2));
    expect(kept.map((e) => e.index)).toEqual([3]);
    expect(truncates).toBe(true);
    expect(index.lastIndex).toBe(3);
    expect(terms(index)).toEqual([1, 1, 2]);
    expect(cache.slice(1, 4).map((e) => e.term)).toEqual([1, 1, 2]);
  });

  it("replaces the last entry alone when the append starts there", () => {
    const { index, cache } = log(0, 5);
    expect(appendInMemory(index, cache, entries(5, 6, 2)).truncates).toBe(true);
    expect(terms(index)).toEqual([1, 1, 1, 1, 2, 2]);
  });

  it("skips entries at or below the compaction point", () => {
    const { index, cache } = log(10, 12);
    const { kept, truncates } = appendInMemory(index, cache, entries(9, 13, 1));
    expect(kept.map((e) => e.index)).toEqual([11, 12, 13]);
    expect(truncates).toBe(true);
    expect(index.firstIndex).toBe(11);
    expect(index.lastIndex).toBe(13);
  });

  it("changes nothing when every entry is compacted, or there are none", () => {
    const { index, cache } = log(10, 12);
    expect(appendInMemory(index, cache, entries(8, 10, 3))).toEqual({ kept: [], truncates: false });
    expect(appendInMemory(index, cache, [])).toEqual({ kept: [], truncates: false });
    expect(terms(index)).toEqual([1, 1]);
    expect(cache.length).toBe(2);
  });
});
