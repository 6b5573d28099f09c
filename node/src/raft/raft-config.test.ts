import { describe, expect, it } from "vitest";
import { MemoryStorage } from "./memory-storage.js";
import { RAFT_DEFAULTS, type RaftOptions, resolveRaftOptions } from "./raft-config.js";
import { RaftNode } from "./raft-node.js";
import { SeededRandom } from "./seeded-random.js";
import { append, drain, entriesWithTerms } from "./test-fixtures/helpers.js";

const base = (over: Partial<RaftOptions> = {}): RaftOptions => ({
  id: "a",
  storage: new MemoryStorage({ voters: ["a", "b", "c"] }),
  random: new SeededRandom(1),
  ...over,
});

describe("resolveRaftOptions", () => {
  it("fills in the defaults and keeps explicit values", () => {
    const r = resolveRaftOptions(base({ electionTicks: 20 }));
    expect(r.electionTicks).toBe(20);
    expect(r.heartbeatTicks).toBe(RAFT_DEFAULTS.heartbeatTicks);
    expect(r.maxInflightMsgs).toBe(RAFT_DEFAULTS.maxInflightMsgs);
    expect(r.applied).toBe(0);
  });

  it.each([
    "electionTicks",
    "heartbeatTicks",
    "maxSizePerMsg",
    "maxInflightMsgs",
    "maxCommittedSizePerReady",
    "snapshotChunkBytes",
    "maxInflightSnapshotChunks",
  ] as const)("rejects a non-positive or fractional %s", (key) => {
    expect(() => resolveRaftOptions(base({ [key]: 0 }))).toThrow(RangeError);
    expect(() => resolveRaftOptions(base({ [key]: -3 }))).toThrow(RangeError);
    expect(() => resolveRaftOptions(base({ [key]: 1.5 }))).toThrow(RangeError);
  });

  it("allows 0 (unbounded) for the byte budgets that document it", () => {
    const r = resolveRaftOptions(base({ maxInflightBytes: 0, maxUncommittedEntriesBytes: 0 }));
    expect(r.maxInflightBytes).toBe(0);
    expect(r.maxUncommittedEntriesBytes).toBe(0);
  });

  it("requires heartbeatTicks < electionTicks", () => {
    expect(() => resolveRaftOptions(base({ electionTicks: 5, heartbeatTicks: 5 }))).toThrow(RangeError);
    expect(resolveRaftOptions(base({ electionTicks: 5, heartbeatTicks: 4 })).heartbeatTicks).toBe(4);
  });

  // Regression: the byte budgets used not to be validated, so a negative or NaN budget silently
  // meant "unbounded".
  it.each(["maxInflightBytes", "maxUncommittedEntriesBytes"] as const)(
    "regression: rejects a negative, fractional or NaN %s",
    (key) => {
      expect(() => resolveRaftOptions(base({ [key]: -1 }))).toThrow(RangeError);
      expect(() => resolveRaftOptions(base({ [key]: 0.5 }))).toThrow(RangeError);
      expect(() => resolveRaftOptions(base({ [key]: Number.NaN }))).toThrow(RangeError);
    },
  );

  // Regression: `{ ...RAFT_DEFAULTS, ...options }` used to let an explicit `undefined` (legal for these
  // optional fields) override the default.
  it.each(["applied", "maxInflightBytes", "maxUncommittedEntriesBytes"] as const)(
    "regression: an option given as undefined takes its default (%s)",
    (key) => {
      const r = resolveRaftOptions(base({ [key]: undefined }));
      expect(r[key]).toBe(RAFT_DEFAULTS[key]);
    },
  );

  it("regression: a node built with `applied: undefined` still applies committed entries", () => {
    const storage = new MemoryStorage({ voters: ["a", "b", "c"] });
    const node = new RaftNode({ ...base({ storage }), applied: undefined });
    node.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1]), 2));
    const h = drain(node, storage);
    expect(h.committed.map((e) => e.index)).toEqual([1, 2]);
    expect(node.status().applied).toBe(2);
  });
});
