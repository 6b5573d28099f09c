import { describe, expect, it } from "vitest";
import { ProposalRefusedError } from "./errors.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { InvariantChecker } from "./test-fixtures/invariants.js";

const VOTERS = ["a", "b", "c"];
const T = 10;

function refusal(f: () => unknown): ProposalRefusedError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ProposalRefusedError);
    return err as ProposalRefusedError;
  }
  throw new Error("expected a refusal");
}

function cluster(): InMemoryRaftCluster {
  const checker = new InvariantChecker();
  const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T }, 1, { onReady: checker.hook });
  c.elect("a");
  c.node("a").propose(text("x"));
  c.settle();
  c.tickAll(1);
  return c;
}

describe("leadership transfer", () => {
  it("to an up-to-date follower: TimeoutNow, and it leads the next term without waiting for ticks", () => {
    const c = cluster();
    const before = c.delivered.length;
    c.node("a").transferLeadership("b");
    c.settle();
    expect(c.node("b").status()).toMatchObject({ role: "leader", term: 2 });
    expect(c.node("a").status()).toMatchObject({ role: "follower", term: 2, leader: "b" });
    expect(c.node("c").status()).toMatchObject({ role: "follower", term: 2, leader: "b" });
    const trace = c.delivered.slice(before);
    expect(trace.filter((m) => m.type === "timeout-now")).toMatchObject([{ from: "a", to: "b", term: 1 }]);
    // The transferee skips the pre-vote and flags its votes so the others' leases do not block it.
    expect(trace.filter((m) => m.type === "pre-vote")).toEqual([]);
    const votes = trace.filter((m) => m.type === "vote");
    expect(votes.length).toBe(2);
    for (const v of votes) expect(v).toMatchObject({ from: "b", term: 2, transfer: true });
    // Nothing committed is lost.
    c.node("b").propose(text("y"));
    c.settle();
    c.tickAll(1);
    for (const id of VOTERS) expect(c.appliedData(id)).toEqual(["x", "y"]);
    expect(refusal(() => c.node("a").propose(text("z")))).toMatchObject({
      reason: "NotLeader",
      leaderHint: "b",
    });
  });

  it("to a lagging follower: the leader first catches it up, then sends TimeoutNow", () => {
    const c = cluster();
    c.cut.add("a->c");
    for (let i = 0; i < 5; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.heal();
    expect(c.node("c").status().lastIndex).toBe(2);
    const atTimeoutNow: { c: number; a: number }[] = [];
    c.filter = (m) => {
      if (m.type === "timeout-now") {
        atTimeoutNow.push({ c: c.node("c").status().lastIndex, a: c.node("a").status().lastIndex });
      }
      return true;
    };
    c.node("a").transferLeadership("c");
    expect(c.node("a").status().transferee).toBe("c");
    c.settle();
    c.tickUntil(() => c.node("c").status().role === "leader", T - 1);
    expect(atTimeoutNow).toEqual([{ c: 7, a: 7 }]);
    expect(c.node("c").status().term).toBe(2);
    c.tickAll(1);
    expect(c.appliedData("c")).toEqual(["x", "v0", "v1", "v2", "v3", "v4"]);
  });

  it("proposals are refused while the transfer is under way", () => {
    const c = cluster();
    c.cut.add("a->c");
    c.node("a").propose(text("v"));
    c.settle();
    c.node("a").transferLeadership("c");
    expect(refusal(() => c.node("a").propose(text("y")))).toMatchObject({
      reason: "TransferInProgress",
      leaderHint: "a",
    });
    expect(refusal(() => c.node("a").proposeBatch([text("y"), text("z")])).reason).toBe("TransferInProgress");
  });

  it("a transfer to the leader itself cancels one under way, as etcd-raft's does", () => {
    const c = cluster();
    c.isolate("c");
    c.node("a").transferLeadership("c");
    expect(c.node("a").status().transferee).toBe("c");
    c.node("a").transferLeadership("a");
    expect(c.node("a").status()).toMatchObject({ role: "leader", transferee: null });
    c.node("a").propose(text("y"));
  });

  it("a transfer that cannot complete is abandoned after one election timeout", () => {
    const c = cluster();
    c.isolate("c");
    c.node("a").transferLeadership("c");
    c.settle();
    c.tickAll(T - 1, ["a", "b"]);
    expect(c.node("a").status()).toMatchObject({ role: "leader", transferee: "c" });
    expect(refusal(() => c.node("a").propose(text("y"))).reason).toBe("TransferInProgress");
    c.tickAll(1, ["a", "b"]);
    expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1, transferee: null });
    c.node("a").propose(text("y"));
    c.settle();
    c.tickAll(1, ["a", "b"]);
    expect(c.appliedData("b")).toEqual(["x", "y"]);
  });

  it("a transfer whose TimeoutNow is lost is abandoned the same way", () => {
    const c = cluster();
    c.filter = (m) => m.type !== "timeout-now";
    c.node("a").transferLeadership("b");
    c.settle();
    c.tickAll(T);
    expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1, transferee: null });
    expect(c.node("b").status().role).toBe("follower");
  });

  it("asking again for the same target is harmless; a new target replaces the old", () => {
    const c = cluster();
    c.isolate("c");
    c.node("a").transferLeadership("c");
    c.node("a").transferLeadership("c");
    c.settle();
    expect(c.sent.filter((m) => m.type === "timeout-now")).toHaveLength(1);
    c.node("a").transferLeadership("b");
    c.settle();
    expect(c.node("b").status()).toMatchObject({ role: "leader", term: 2 });
  });

  it("transfer to itself is a no-op; to a non-voter a RangeError; from a non-leader a refusal", () => {
    const c = cluster();
    c.node("a").transferLeadership("a");
    expect(c.node("a").status()).toMatchObject({ role: "leader", transferee: null });
    c.node("a").propose(text("still-ok"));
    expect(() => c.node("a").transferLeadership("zz")).toThrow(RangeError);
    expect(refusal(() => c.node("b").transferLeadership("c"))).toMatchObject({
      reason: "NotLeader",
      leaderHint: "a",
    });
  });

  it("a follower ignores TimeoutNow from anyone but its leader", () => {
    const c = cluster();
    c.node("b").step({ type: "timeout-now", from: "c", to: "b", term: 1 });
    c.settle();
    expect(c.node("b").status()).toMatchObject({ role: "follower", term: 1 });
    expect(c.node("a").status().role).toBe("leader");
  });
});
