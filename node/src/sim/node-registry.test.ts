import { describe, expect, it } from "vitest";
import { decodeConfChange } from "../raft/conf-change.js";
import { SeededRandom } from "../raft/index.js";
import { INITIAL_VOTERS, NodeRegistry } from "./node-registry.js";
import type { DiskFaults } from "./sim-disk.js";

const DISK: DiskFaults = { minSyncDelay: 1, maxSyncDelay: 1, stallRate: 0, stallDelay: 0 };

function registry(lazySnapshots?: { chance: number; random: SeededRandom }): NodeRegistry {
  return new NodeRegistry({
    diskSeeds: new SeededRandom(1),
    clock: new SeededRandom(2),
    stateLoss: new SeededRandom(3),
    tickInterval: 10,
    tickSkew: 3,
    disk: DISK,
    ...(lazySnapshots === undefined ? {} : { lazySnapshots }),
  });
}

describe("NodeRegistry", () => {
  it("bootstraps the initial voters through the log: the configuration is its first entry, committed", () => {
    const r = registry();
    const nodes = INITIAL_VOTERS.map(() => r.create(INITIAL_VOTERS));
    expect(nodes.map((n) => n.id)).toEqual(["n1", "n2", "n3"]);
    for (const node of nodes) {
      const storage = node.disk.storage;
      expect(storage.initialState()).toEqual({
        hardState: { term: 1, vote: null, commit: 1 },
        conf: { voters: [] },
      });
      const [first] = storage.entries(1, 2, Number.POSITIVE_INFINITY);
      expect(first?.type).toBe("conf");
      expect(decodeConfChange(first!.data)).toEqual({ type: "bootstrap", voters: [...INITIAL_VOTERS] });
      expect(node.tickInterval).toBeGreaterThanOrEqual(7);
      expect(node.tickInterval).toBeLessThanOrEqual(13);
    }
  });

  it("gives a node that joins later the next ID and an empty disk with no configuration", () => {
    const r = registry();
    for (let k = 0; k < 3; k++) r.create(INITIAL_VOTERS);
    const fresh = r.create(null);
    expect(fresh.id).toBe("n4");
    expect(fresh.disk.storage.lastIndex()).toBe(0);
    expect(fresh.disk.storage.initialState().conf).toEqual({ voters: [] });
    expect(r.get("n4")).toBe(fresh);
    expect(r.all.map((n) => n.id)).toEqual(["n1", "n2", "n3", "n4"]);
    expect(() => r.create(["n1", "n2"])).toThrow();
  });

  it("keeps retired nodes, reporting a lost disk as none", () => {
    const r = registry();
    const [a, b] = [r.create(["n1", "n2"]), r.create(["n1", "n2"])];
    b.wiped = true;
    b.retired = true;
    expect(r.diskOf("n1")).toBe(a.disk.storage);
    expect(r.diskOf("n2")).toBeNull();
    expect(() => r.diskOf("n9")).toThrow();
    expect(r.active()).toEqual([a]);
    expect(r.appliedConf("n1")).toBeNull();
    expect(r.running()).toEqual([]);
  });

  it("gives each disk lazy snapshots by its own draw, shifting nothing else of a node", () => {
    const eager = registry();
    const some = registry({ chance: 0.5, random: new SeededRandom(9) });
    const all = registry({ chance: 1, random: new SeededRandom(9) });
    const made = [eager, some, all].map((r) => Array.from({ length: 12 }, () => r.create(null)));
    const lazy = made.map((nodes) => nodes.map((n) => n.disk.storage.lazy));
    expect(lazy[0]).toEqual(Array(12).fill(false));
    expect(lazy[1]).toContain(true);
    expect(lazy[1]).toContain(false);
    expect(lazy[2]).toEqual(Array(12).fill(true));
    // The same clocks and disk timings whatever was drawn.
    const timing = [eager, some, all].map((r, k) => {
      r.setDiskFaults({ ...DISK, maxSyncDelay: 50 });
      const nodes = made[k]!;
      const delays = nodes.map((n) => n.disk.write({ snapshot: null, entries: [], hardState: null }));
      return { ticks: nodes.map((n) => n.tickInterval), delays };
    });
    expect(new Set(timing[0]!.delays).size).toBeGreaterThan(1);
    expect(timing[1]).toEqual(timing[0]);
    expect(timing[2]).toEqual(timing[0]);
  });

  it("applies disk faults to every disk, those of nodes added later too", () => {
    const r = registry();
    const early = r.create(["n1"]);
    const slow: DiskFaults = { ...DISK, minSyncDelay: 9, maxSyncDelay: 9 };
    r.setDiskFaults(slow);
    const late = r.create(null);
    for (const node of [early, late])
      expect(node.disk.write({ snapshot: null, entries: [], hardState: null })).toBe(9);
  });
});
