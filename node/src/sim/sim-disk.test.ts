import { describe, expect, it } from "vitest";
import { crc32c } from "../checksum/crc32c.js";
import { SeededRandom } from "../raft/seeded-random.js";
import type { Entry } from "../raft/types.js";
import { type DiskFaults, SimDisk } from "./sim-disk.js";

const CONF = { voters: ["a", "b", "c"] };
const FAULTS: DiskFaults = { minSyncDelay: 2, maxSyncDelay: 6, stallRate: 0, stallDelay: 0 };

function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let index = from; index <= to; index++)
    out.push({ index, term, type: "normal", data: new Uint8Array([index]) });
  return out;
}

function disk(): SimDisk {
  return new SimDisk(new SeededRandom(3), FAULTS);
}

describe("SimDisk", () => {
  it("keeps a write out of the durable image until its fsync completes", () => {
    const d = disk();
    const delay = d.write({
      snapshot: null,
      entries: entries(1, 3, 1),
      hardState: { term: 1, vote: "a", commit: 0 },
    });
    expect(delay).toBeGreaterThanOrEqual(2);
    expect(delay).toBeLessThanOrEqual(6);
    expect(d.storage.lastIndex()).toBe(0);
    expect(d.storage.initialState().hardState.term).toBe(0);
    d.sync();
    expect(d.storage.lastIndex()).toBe(3);
    expect(d.storage.initialState().hardState).toEqual({ term: 1, vote: "a", commit: 0 });
    expect(d.pending).toBeNull();
  });

  it("a crash loses the unsynced write and keeps what was synced", () => {
    const d = disk();
    d.write({ snapshot: null, entries: entries(1, 2, 1), hardState: { term: 1, vote: "a", commit: 1 } });
    d.sync();
    d.write({ snapshot: null, entries: entries(3, 5, 2), hardState: { term: 2, vote: "b", commit: 2 } });
    const lost = d.crash();
    expect(lost?.entries.map((e) => e.index)).toEqual([3, 4, 5]);
    expect(d.storage.lastIndex()).toBe(2);
    expect(d.storage.initialState().hardState).toEqual({ term: 1, vote: "a", commit: 1 });
    // A later sync has nothing left to make durable.
    d.sync();
    expect(d.storage.lastIndex()).toBe(2);
  });

  it("persists the snapshot before the entries that follow it", () => {
    const d = disk();
    d.write({ snapshot: null, entries: entries(1, 4, 1), hardState: null });
    d.sync();
    const snapshotData = new Uint8Array([1, 2, 3]);
    const snapshot = { meta: { index: 10, term: 3, conf: CONF }, size: 3, checksum: crc32c(snapshotData) };
    d.write({
      snapshot,
      snapshotData,
      entries: entries(11, 12, 3),
      hardState: { term: 3, vote: null, commit: 10 },
    });
    d.sync();
    expect(d.storage.snapshotMeta().index).toBe(10);
    expect(d.storage.firstIndex()).toBe(11);
    expect(d.storage.lastIndex()).toBe(12);
  });

  it("a conflicting write replaces the stored suffix", () => {
    const d = disk();
    d.write({ snapshot: null, entries: entries(1, 5, 1), hardState: null });
    d.sync();
    d.write({ snapshot: null, entries: entries(3, 3, 2), hardState: null });
    d.sync();
    expect(d.storage.lastIndex()).toBe(3);
    expect(d.storage.term(3)).toBe(2);
  });

  it("refuses a second write before the first is synced", () => {
    const d = disk();
    d.write({ snapshot: null, entries: entries(1, 1, 1), hardState: null });
    expect(() => d.write({ snapshot: null, entries: entries(2, 2, 1), hardState: null })).toThrow();
  });
});
