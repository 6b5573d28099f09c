import { describe, expect, it } from "vitest";
import { ofType, Solo, storageWithLog, vote, voteResponse } from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

const VOTERS = ["a", "b", "c"];

describe("pre-vote", () => {
  it("a pre-candidate keeps its term and vote and persists nothing", () => {
    const s = new Solo({ storage: storageWithLog(VOTERS, [1, 2], { term: 3, vote: "b" }) });
    s.node.campaign();
    const h = s.flush();
    expect(s.node.status()).toMatchObject({ role: "pre-candidate", term: 3, vote: "b", leader: null });
    expect(h.hardStates).toEqual([]);
    expect(s.storage.initialState().hardState).toMatchObject({ term: 3, vote: "b" });
    const pre = ofType(h.messages, "pre-vote");
    expect(pre.map((m) => m.to).sort()).toEqual(["b", "c"]);
    for (const m of pre) expect(m).toMatchObject({ term: 4, index: 2, logTerm: 2, transfer: false });
    expect(ofType(h.messages, "vote")).toEqual([]);
  });

  it("a quorum of granted pre-votes starts the real election in term+1", () => {
    const s = new Solo({ storage: storageWithLog(VOTERS, [1], { term: 1 }) });
    s.node.campaign();
    s.flush();
    const h = s.step(voteResponse("c", "a", 2, false, true));
    expect(s.node.status()).toMatchObject({ role: "candidate", term: 2, vote: "a" });
    expect(ofType(h.messages, "vote").map((m) => m.term)).toEqual([2, 2]);
  });

  it("a pre-candidate refused by a majority returns to follower without a trace", () => {
    const s = new Solo({ storage: storageWithLog(VOTERS, [1], { term: 1, vote: "c" }) });
    s.node.campaign();
    s.flush();
    const h = s.step(voteResponse("b", "a", 1, true, true), voteResponse("c", "a", 1, true, true));
    expect(s.node.status()).toMatchObject({ role: "follower", term: 1, vote: "c" });
    expect(h.hardStates).toEqual([]);
  });

  it("a pre-vote refusal carrying a newer term brings the pre-candidate up to that term", () => {
    const s = new Solo({ storage: storageWithLog(VOTERS, [1], { term: 1 }) });
    s.node.campaign();
    s.flush();
    s.step(voteResponse("b", "a", 6, true, true));
    expect(s.node.status()).toMatchObject({ role: "follower", term: 6, vote: null });
  });

  describe("granting", () => {
    const voter = (): Solo =>
      new Solo({ storage: storageWithLog(VOTERS, [1, 1, 2], { term: 2, vote: "a" }) });

    it.each([
      ["an older last term", true, 9, 1],
      ["a shorter log of the same last term", true, 2, 2],
      ["the same log", false, 3, 2],
      ["a longer log", false, 4, 2],
      ["a newer last term", false, 1, 3],
    ])("to a candidate with %s: reject=%s", (_name, reject, index, logTerm) => {
      const s = voter();
      const h = s.step(vote("b", "a", 3, index, logTerm, { pre: true }));
      expect(ofType(h.messages, "pre-vote-response")).toMatchObject([{ to: "b", reject }]);
      // Whatever the answer, the voter's own state is unchanged.
      expect(s.node.status()).toMatchObject({ term: 2, vote: "a", role: "follower" });
    });

    it("a granted pre-vote carries the candidate's future term, a refusal the voter's term", () => {
      const s = voter();
      const h = s.step(vote("b", "a", 3, 3, 2, { pre: true }), vote("c", "a", 3, 1, 1, { pre: true }));
      expect(ofType(h.messages, "pre-vote-response")).toEqual([
        { type: "pre-vote-response", from: "a", to: "b", term: 3, reject: false },
        { type: "pre-vote-response", from: "a", to: "c", term: 2, reject: true },
      ]);
    });

    it("a pre-vote for the current term is granted only to the node voted for", () => {
      const s = voter();
      let h = s.step(vote("b", "a", 2, 3, 2, { pre: true }));
      expect(ofType(h.messages, "pre-vote-response")).toMatchObject([{ reject: true }]);
      const t = new Solo({ storage: storageWithLog(VOTERS, [1, 1, 2], { term: 2, vote: "b" }) });
      h = t.step(vote("b", "a", 2, 3, 2, { pre: true }));
      expect(ofType(h.messages, "pre-vote-response")).toMatchObject([{ reject: false }]);
    });
  });

  it("a partitioned node that keeps timing out does not inflate its term, and rejoins without disruption", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.isolate("c");
    c.node("a").propose(text("while-away"));
    c.settle();
    c.tickAll(200);
    // c campaigned many times, all pre-votes: its term never moved.
    const preVotesByC = c.sent.filter((m) => m.from === "c" && m.type === "pre-vote").length;
    expect(preVotesByC).toBeGreaterThan(10);
    expect(c.sent.filter((m) => m.from === "c" && m.type === "vote")).toEqual([]);
    expect(c.node("c").status()).toMatchObject({ term: 1, vote: "a" });

    c.heal();
    c.tickAll(10);
    expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });
    for (const id of VOTERS) expect(c.node(id).status()).toMatchObject({ term: 1, leader: "a" });
    expect(c.appliedData("c")).toEqual(["while-away"]);
  });

  it("a partitioned node with a stale log cannot win even once the leader is gone", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.isolate("c");
    c.node("a").propose(text("x"));
    c.settle();
    // Now a dies; b (up to date) and c (stale) remain.
    c.heal();
    c.isolate("a");
    c.tickUntil(() => c.node("b").status().role === "leader", 200, ["b", "c"]);
    expect(c.node("b").status().term).toBeGreaterThan(1);
    expect(c.node("c").status().role).toBe("follower");
    // c never got past the pre-vote: b refused its stale log each time.
    expect(c.sent.filter((m) => m.from === "c" && m.type === "pre-vote").length).toBeGreaterThan(0);
    expect(c.sent.filter((m) => m.from === "c" && m.type === "vote")).toEqual([]);
  });
});
