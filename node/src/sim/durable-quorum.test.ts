import { describe, expect, it } from "vitest";
import { MemoryStorage } from "../raft/memory-storage.js";
import type { Entry } from "../raft/types.js";
import { durableCopies } from "./durable-quorum.js";

function log(terms: readonly number[]): MemoryStorage {
  const s = new MemoryStorage({ voters: ["n1", "n2", "n3"] });
  const entries: Entry[] = terms.map((term, i) => ({
    term,
    index: i + 1,
    type: "normal",
    data: new Uint8Array(),
  }));
  s.append(entries);
  return s;
}

describe("durableCopies", () => {
  it("counts the disks that hold the same entry, not those holding another term there or nothing", () => {
    const disks = [log([1, 2]), log([1, 2]), log([1, 3]), log([1])];
    expect(durableCopies(disks, 2)).toBe(2);
    expect(durableCopies(disks, 1)).toBe(4);
    expect(durableCopies(disks, 3)).toBe(0);
  });

  it("counts a snapshot covering the index with the entries held in logs", () => {
    const compacted = log([1, 2, 2]);
    compacted.createSnapshot(3, { voters: ["n1", "n2", "n3"] }, new Uint8Array());
    expect(durableCopies([compacted, log([1, 2]), log([1])], 2)).toBe(2);
  });
});
