import { describe, expect, it } from "vitest";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

describe("RaftNode smoke", () => {
  it("elects a leader and replicates a proposal", () => {
    const c = new InMemoryRaftCluster(["a", "b", "c"]);
    c.elect("a");
    expect(c.leader()).toBe("a");
    c.node("a").propose(text("x"));
    c.settle();
    c.tickAll(2);
    for (const id of ["a", "b", "c"]) expect(c.appliedData(id)).toEqual(["x"]);
  });
});
