import { describe, expect, it } from "vitest";
import { RaftInvariantError } from "./errors.js";
import { MemorySnapshotSink } from "./memory-snapshot-sink.js";
import { MemoryStorage } from "./memory-storage.js";
import { RaftNode } from "./raft-node.js";
import { SeededRandom } from "./seeded-random.js";
import { SnapshotInbox } from "./snapshot-inbox.js";
import { append, entriesWithTerms, entry, ofType, readyOf, Solo, vote } from "./test-fixtures/helpers.js";
import {
  InMemoryRaftCluster,
  type InMemoryRaftMember,
  text,
} from "./test-fixtures/in-memory-raft-cluster.js";
import { InvariantChecker } from "./test-fixtures/invariants.js";

const VOTERS = ["a", "b", "c"];

describe("the Ready contract", () => {
  it("ready() twice without advance() throws, and advance() without ready() throws", () => {
    const s = new Solo();
    s.node.campaign();
    s.node.ready();
    expect(() => s.node.ready()).toThrow(RaftInvariantError);
    s.node.advance();
    expect(() => s.node.advance()).toThrow(RaftInvariantError);
  });

  it("hasReady() is false while a Ready is outstanding, even as new work arrives", () => {
    const s = new Solo();
    s.node.campaign();
    expect(s.node.hasReady()).toBe(true);
    s.node.ready();
    expect(s.node.hasReady()).toBe(false);
    s.node.step(vote("b", "a", 5, 0, 0));
    expect(s.node.hasReady()).toBe(false);
    s.node.advance();
    expect(s.node.hasReady()).toBe(true);
    const rd = s.node.ready();
    expect(ofType(rd.messages, "vote-response")).toHaveLength(1);
    s.node.advance();
    expect(s.node.hasReady()).toBe(false);
  });

  it("an idle node has nothing to hand out", () => {
    const s = new Solo();
    expect(s.node.hasReady()).toBe(false);
    s.node.tick();
    expect(s.node.hasReady()).toBe(false);
  });

  it("soft and hard state appear only when they change", () => {
    const s = new Solo();
    s.node.campaign();
    let rd = s.node.ready();
    expect(rd.softState).toEqual({ role: "pre-candidate", leader: null, term: 0 });
    expect(rd.hardState).toBeNull();
    s.node.advance();
    s.node.step({ type: "pre-vote-response", from: "b", to: "a", term: 1, reject: false });
    rd = s.node.ready();
    expect(rd.softState).toEqual({ role: "candidate", leader: null, term: 1 });
    expect(rd.hardState).toEqual({ term: 1, vote: "a", commit: 0 });
    s.node.advance();
    s.node.step({ type: "pre-vote-response", from: "c", to: "a", term: 1, reject: false });
    expect(s.node.hasReady()).toBe(false);
  });

  it("a leader's new entries and the appends carrying them come in the same Ready", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.node("a").propose(text("x"));
    const rd = c.node("a").ready();
    expect(rd.entries.map((e) => e.index)).toEqual([2]);
    const appends = ofType(rd.messages, "append");
    expect(appends.map((m) => m.to).sort()).toEqual(["b", "c"]);
    for (const m of appends) expect(m.entries.map((e) => e.index)).toEqual([2]);
    c.member("a").storage.append(rd.entries);
    c.node("a").advance();
    expect(c.node("a").hasReady()).toBe(false);
  });

  it("a granted vote is sent in the same Ready as the durable vote", () => {
    const s = new Solo();
    s.node.step(vote("b", "a", 3, 0, 0));
    const rd = s.node.ready();
    expect(rd.hardState).toMatchObject({ term: 3, vote: "b" });
    expect(ofType(rd.messages, "vote-response")).toMatchObject([{ reject: false, term: 3 }]);
  });

  it("a follower's acknowledgement comes with the entries it acknowledges", () => {
    const s = new Solo();
    s.node.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1]), 0));
    const rd = s.node.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([1, 2]);
    expect(ofType(rd.messages, "append-response")).toMatchObject([{ index: 2, reject: false }]);
  });

  it("an entry is handed out once; a replaced one is handed out in its new version only", () => {
    const s = new Solo();
    let h = s.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1, 1]), 1));
    expect(h.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["1@1", "2@1", "3@1"]);
    h = s.step(append("b", "a", 1, 3, 1, [], 1));
    expect(h.entries).toEqual([]);
    h = s.step(append("c", "a", 2, 1, 1, [entry(2, 2, "new")], 1));
    expect(h.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["2@2"]);
    expect(s.terms()).toEqual([1, 2]);
    h = s.step(append("c", "a", 2, 2, 2, [entry(3, 2)], 2));
    expect(h.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["3@2"]);
    expect(h.committed.map((e) => e.index)).toEqual([2]);
  });

  it("entries appended while a Ready is outstanding are handed out next, without repeats", () => {
    const s = new Solo();
    s.node.step(append("b", "a", 1, 0, 0, [entry(1, 1)], 0));
    const rd1 = s.node.ready();
    s.node.step(append("b", "a", 1, 1, 1, [entry(2, 1)], 0));
    s.storage.append(rd1.entries);
    s.node.advance();
    const rd2 = s.node.ready();
    expect(rd2.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["2@1"]);
  });

  // Regression: advance() used to mark entries stable only when the Ready's *last* entry survived, so a
  // truncation behind an outstanding Ready made its untouched prefix be handed out again.
  it("regression: an entry is not handed out again when a later entry of the same outstanding Ready is replaced", () => {
    const s = new Solo();
    s.node.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1]), 0));
    const rd1 = s.node.ready();
    expect(rd1.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["1@1", "2@1"]);
    // While rd1 is being persisted, a new leader replaces entry 2 (entry 1 is untouched).
    s.node.step(append("c", "a", 2, 1, 1, [entry(2, 2)], 0));
    s.storage.append(rd1.entries);
    if (rd1.hardState) s.storage.setHardState(rd1.hardState);
    s.node.advance();
    const rd2 = s.node.ready();
    expect(rd2.entries.map((e) => `${e.index}@${e.term}`)).toEqual(["2@2"]);
  });

  it("committed entries are handed out once and only after they are in a Ready or storage", () => {
    const checker = new InvariantChecker();
    const c = new InMemoryRaftCluster(VOTERS, { maxCommittedSizePerReady: 30 }, 1, { onReady: checker.hook });
    c.elect("a");
    for (let i = 0; i < 10; i++) c.node("a").propose(text(`v${i}`));
    c.settle();
    c.tickAll(1);
    for (const id of VOTERS) {
      expect(c.member(id).applied.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    }
  });

  it.each([
    ["synchronous", false],
    ["asynchronous", true],
  ])(
    "persist-before-send and single hand-out hold through elections, truncations and restarts (%s persistence)",
    (_name, asyncPersist) => {
      const checker = new InvariantChecker();
      const ids = ["a", "b", "c", "d", "e"];
      const c = new InMemoryRaftCluster(ids, { maxSizePerMsg: 64 }, 2, { onReady: checker.hook });
      c.asyncPersist = asyncPersist;
      c.elect("a");
      for (let round = 0; round < 8; round++) {
        const l = ids.find((id) => c.node(id).status().role === "leader");
        if (l) {
          // The leader is cut off with proposals it cannot commit: they will be truncated later.
          for (let i = 0; i < 4; i++) c.node(l).propose(text(`${round}:${i}`));
          c.settle();
          c.isolate(l);
          c.node(l).propose(text(`doomed${round}`));
          c.settle();
        }
        const live = ids.filter((id) => id !== l);
        c.tickUntil(() => live.some((id) => c.node(id).status().role === "leader"), 300, live);
        c.heal();
        if (l && round % 3 === 0) c.restart(l, 500 + round);
        c.tickAll(4);
      }
      expect(checker.count).toBeGreaterThan(200);
      expect(checker.leaders.size).toBeGreaterThanOrEqual(9);
      for (const id of ids) expect(c.appliedData(id).some((d) => d.startsWith("doomed"))).toBe(false);
    },
  );

  describe("the invariant checker itself (so the properties above can fail)", () => {
    const member = (storage: MemoryStorage): InMemoryRaftMember => ({
      raft: new RaftNode({ id: "a", storage, random: new SeededRandom(1) }),
      storage,
      applied: [],
      readStates: [],
      readFailures: [],
      inbox: new SnapshotInbox(() => new MemorySnapshotSink()),
    });

    it("flags an append that carries an entry neither stored nor in the Ready", () => {
      const storage = new MemoryStorage({ voters: VOTERS });
      storage.setHardState({ term: 1, vote: "a", commit: 0 });
      const rd = readyOf({ messages: [append("a", "b", 1, 0, 0, [entry(1, 1)], 0)] });
      expect(() => new InvariantChecker().check("a", rd, member(storage))).toThrow(/not durable/);
      const ok = readyOf({ entries: [entry(1, 1)], messages: [append("a", "b", 1, 0, 0, [entry(1, 1)], 0)] });
      expect(() => new InvariantChecker().check("a", ok, member(storage))).not.toThrow();
    });

    it("flags a vote granted before it is durable", () => {
      const storage = new MemoryStorage({ voters: VOTERS });
      const rd = readyOf({
        messages: [{ type: "vote-response", from: "a", to: "b", term: 2, reject: false }],
      });
      expect(() => new InvariantChecker().check("a", rd, member(storage))).toThrow(
        /before the vote is durable|not durable|sent before/,
      );
    });

    it("flags an entry handed out twice and a commit going back", () => {
      const storage = new MemoryStorage({ voters: VOTERS });
      const m = member(storage);
      const checker = new InvariantChecker();
      checker.check(
        "a",
        readyOf({ entries: [entry(1, 1)], hardState: { term: 1, vote: null, commit: 0 } }),
        m,
      );
      storage.append([entry(1, 1)]);
      storage.setHardState({ term: 1, vote: null, commit: 1 });
      expect(() => checker.check("a", readyOf({ entries: [entry(1, 1), entry(2, 1)] }), m)).toThrow(/twice/);
      expect(() =>
        new InvariantChecker().check("a", readyOf({ hardState: { term: 1, vote: null, commit: 0 } }), m),
      ).toThrow(/commit went back/);
    });
  });
});
