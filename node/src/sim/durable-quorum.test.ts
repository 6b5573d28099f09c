import { describe, expect, it } from "vitest";
import type { Entry, NodeId } from "../raft/types.js";
import { durableCopies } from "./durable-quorum.js";
import { LazySnapshotStorage } from "./lazy-snapshot-storage.js";

function log(terms: readonly number[], lazy = false): LazySnapshotStorage {
  const s = new LazySnapshotStorage(lazy);
  const entries: Entry[] = terms.map((term, i) => ({
    term,
    index: i + 1,
    type: "normal",
    data: new Uint8Array(),
  }));
  s.append(entries);
  return s;
}

function disks(byId: Record<NodeId, LazySnapshotStorage | null>): (id: NodeId) => LazySnapshotStorage | null {
  return (id) => byId[id] ?? null;
}

describe("durableCopies", () => {
  it("counts the disks that hold the same entry, not those holding another term there or nothing", () => {
    const diskOf = disks({ a: log([1, 2]), b: log([1, 2]), c: log([1, 3]), d: log([1]) });
    const all = ["a", "b", "c", "d"];
    expect(durableCopies(all, diskOf, 2)).toBe(2);
    expect(durableCopies(all, diskOf, 1)).toBe(4);
    expect(durableCopies(all, diskOf, 3)).toBe(0);
  });

  it("counts a snapshot covering the index with the entries held in logs", () => {
    const compacted = log([1, 2, 2]);
    compacted.takeSnapshot(3, { voters: ["a", "b", "c"] }, () => new Uint8Array());
    expect(durableCopies(["a", "b", "c"], disks({ a: compacted, b: log([1, 2]), c: log([1]) }), 2)).toBe(2);
  });

  it("counts a snapshot point with no file as covering too: the state machine is durable there", () => {
    const point = log([1, 2, 2], true);
    point.takeSnapshot(3, { voters: ["a", "b", "c"] }, () => new Uint8Array());
    point.compact(3);
    expect(point.onPoint).toBe(true);
    expect(durableCopies(["a", "b", "c"], disks({ a: point, b: log([1, 2]), c: log([1]) }), 2)).toBe(2);
  });

  it("counts only the voters given: a learner's copy protects nothing", () => {
    const diskOf = disks({ a: log([1, 2]), b: log([1]), c: log([1]), learner: log([1, 2]) });
    expect(durableCopies(["a", "b", "c"], diskOf, 2)).toBe(1);
    expect(durableCopies(["a", "b", "c", "learner"], diskOf, 2)).toBe(2);
  });

  it("counts a voter whose disk was lost with the holders: it never votes again", () => {
    const diskOf = disks({ a: log([1, 2]), b: log([1]), c: null });
    expect(durableCopies(["a", "b", "c"], diskOf, 2)).toBe(2);
    expect(durableCopies(["a", "b", "c"], diskOf, 3)).toBe(1);
  });
});
