import { describe, expect, it } from "vitest";
import { ProposalRefusedError, RaftError } from "./errors.js";
import { Solo } from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

const VOTERS = ["a", "b", "c"];

function refusal(f: () => unknown): ProposalRefusedError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(ProposalRefusedError);
    return err as ProposalRefusedError;
  }
  throw new Error("expected a refusal");
}

const payload = (n: number): Uint8Array => new Uint8Array(n).fill(1);

describe("proposals", () => {
  it("returns where the entry was appended, and the batch form returns the first index", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    expect(c.node("a").propose(text("x"))).toEqual({ index: 2, term: 1 });
    expect(c.node("a").proposeBatch([text("y"), text("z")])).toEqual({ firstIndex: 3, term: 1 });
    c.settle();
    c.tickAll(1);
    for (const id of VOTERS) expect(c.appliedData(id)).toEqual(["x", "y", "z"]);
    const applied = c.member("b").applied.filter((e) => e.type === "normal");
    expect(applied.map((e) => [e.index, e.term])).toEqual([
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
  });

  it("are refused with NoLeader when no leader is known, as a typed error", () => {
    const s = new Solo();
    const err = refusal(() => s.node.propose(text("x")));
    expect(err.reason).toBe("NoLeader");
    expect(err.leaderHint).toBeNull();
    expect(err).toBeInstanceOf(RaftError);
    expect(err.code).toBe("RaftProposalRefused");
    expect(err.name).toBe("ProposalRefusedError");
    expect(s.node.hasReady()).toBe(false);
    expect(s.node.status().lastIndex).toBe(0);
  });

  it("are refused with NoLeader by a (pre-)candidate", () => {
    const s = new Solo();
    s.node.campaign();
    s.flush();
    expect(refusal(() => s.node.propose(text("x"))).reason).toBe("NoLeader");
  });

  it("are refused with NotLeader and a leader hint by a follower", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("b");
    const err = refusal(() => c.node("a").propose(text("x")));
    expect(err.reason).toBe("NotLeader");
    expect(err.leaderHint).toBe("b");
    expect(refusal(() => c.node("c").proposeBatch([text("x")])).leaderHint).toBe("b");
    expect(c.node("a").hasReady()).toBe(false);
  });

  it("are refused with TransferInProgress during a leadership transfer", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.isolate("c");
    c.node("a").transferLeadership("c");
    const err = refusal(() => c.node("a").propose(text("x")));
    expect(err.reason).toBe("TransferInProgress");
    expect(err.leaderHint).toBe("a");
  });

  describe("uncommitted bytes bound", () => {
    const opts = { maxUncommittedEntriesBytes: 250 };

    it("refuses once the uncommitted tail would exceed the bound, and frees it on commit", () => {
      const c = new InMemoryRaftCluster(VOTERS, opts);
      c.elect("a");
      c.isolate("b");
      c.isolate("c");
      const a = c.node("a");
      a.propose(payload(76)); // 100 bytes
      a.propose(payload(76)); // 200 bytes
      const err = refusal(() => a.propose(payload(76)));
      expect(err.reason).toBe("UncommittedBytesExceeded");
      expect(err.leaderHint).toBe("a");
      // A smaller entry that still fits is accepted.
      a.propose(payload(26)); // 250 bytes: exactly the bound
      expect(refusal(() => a.propose(payload(0))).reason).toBe("UncommittedBytesExceeded");
      const last = a.status().lastIndex;

      c.heal();
      c.settle();
      c.tickAll(2);
      expect(a.status().commit).toBe(last);
      a.propose(payload(76));
      a.propose(payload(76));
      expect(refusal(() => a.propose(payload(76))).reason).toBe("UncommittedBytesExceeded");
    });

    it("entries committed earlier no longer count toward the bound", () => {
      const c = new InMemoryRaftCluster(VOTERS, opts);
      c.elect("a");
      const a = c.node("a");
      a.propose(payload(76));
      c.settle(); // committed
      c.isolate("b");
      c.isolate("c");
      a.propose(payload(76));
      a.propose(payload(76));
      expect(refusal(() => a.propose(payload(76))).reason).toBe("UncommittedBytesExceeded");
    });

    it("does not count the leader's no-op", () => {
      const c = new InMemoryRaftCluster(VOTERS, { maxUncommittedEntriesBytes: 200 });
      // No acknowledgement reaches a: its no-op stays uncommitted.
      c.filter = (m) => m.type !== "append-response";
      c.elect("a");
      const a = c.node("a");
      expect(a.status()).toMatchObject({ role: "leader", commit: 0, lastIndex: 1 });
      a.propose(payload(76));
      a.propose(payload(76));
      expect(a.status().lastIndex).toBe(3);
    });

    it("proposeBatch is all-or-nothing", () => {
      const c = new InMemoryRaftCluster(VOTERS, opts);
      c.elect("a");
      c.isolate("b");
      c.isolate("c");
      const a = c.node("a");
      a.propose(payload(76));
      c.settle();
      const last = a.status().lastIndex;
      expect(refusal(() => a.proposeBatch([payload(76), payload(76)])).reason).toBe(
        "UncommittedBytesExceeded",
      );
      expect(a.status().lastIndex).toBe(last);
      expect(a.hasReady()).toBe(false);
      expect(a.proposeBatch([payload(26), payload(26)])).toEqual({ firstIndex: last + 1, term: 1 });
      expect(a.status().lastIndex).toBe(last + 2);
    });

    it("a bound of 0 means unbounded", () => {
      const c = new InMemoryRaftCluster(VOTERS, { maxUncommittedEntriesBytes: 0 });
      c.elect("a");
      c.isolate("b");
      c.isolate("c");
      for (let i = 0; i < 50; i++) c.node("a").propose(payload(1000));
      expect(c.node("a").status().lastIndex).toBe(51);
    });

    it("a new leader starts with an empty budget", () => {
      const c = new InMemoryRaftCluster(VOTERS, opts);
      c.elect("a");
      c.isolate("a");
      c.node("a").propose(payload(76));
      c.node("a").propose(payload(76));
      c.tickUntil(
        () => c.node("b").status().role === "leader" || c.node("c").status().role === "leader",
        100,
        ["b", "c"],
      );
      const l = c.node("b").status().role === "leader" ? "b" : "c";
      c.node(l).propose(payload(76));
      c.node(l).propose(payload(76));
      expect(refusal(() => c.node(l).propose(payload(76))).reason).toBe("UncommittedBytesExceeded");
    });
  });

  it("a batch is appended contiguously in one term and applied in order", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("c");
    const batch = ["p", "q", "r", "s"].map(text);
    const { firstIndex, term } = c.node("c").proposeBatch(batch);
    c.settle();
    c.tickAll(1);
    const applied = c.member("a").applied.filter((e) => e.type === "normal");
    expect(applied.map((e) => e.index)).toEqual([firstIndex, firstIndex + 1, firstIndex + 2, firstIndex + 3]);
    expect(applied.every((e) => e.term === term)).toBe(true);
    expect(c.appliedData("a")).toEqual(["p", "q", "r", "s"]);
  });
});
