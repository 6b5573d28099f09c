import { describe, expect, it } from "vitest";
import { ProposalRefusedError } from "./errors.js";
import {
  heartbeat,
  heartbeatResponse,
  ofType,
  ScriptedRandom,
  Solo,
  soloLeader,
} from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

const VOTERS = ["a", "b", "c"];
const T = 10;

function ready(): InMemoryRaftCluster {
  const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T });
  c.elect("a");
  c.node("a").propose(text("x"));
  c.settle();
  c.tickAll(1);
  expect(c.node("a").status().commit).toBe(2);
  return c;
}

describe("ReadIndex", () => {
  describe("on the leader", () => {
    it("answers only after a quorum confirms leadership in a heartbeat round", () => {
      const c = ready();
      c.isolate("b");
      c.isolate("c");
      c.node("a").readIndex("r1");
      c.settle();
      c.tickAll(2, ["a"]);
      expect(c.member("a").readStates).toEqual([]);
      c.heal();
      c.settle();
      expect(c.member("a").readStates).toEqual([]);
      c.tickAll(1, ["a"]);
      expect(c.member("a").readStates).toEqual([{ requestId: "r1", index: 2 }]);
    });

    it("answers at once when followers are reachable", () => {
      const c = ready();
      c.node("a").readIndex("r1");
      c.settle();
      expect(c.member("a").readStates).toEqual([{ requestId: "r1", index: 2 }]);
      const hb = c.delivered.filter((m) => m.type === "heartbeat");
      expect(hb.length).toBeGreaterThan(0);
    });

    it("needs a quorum, not everyone: 5 voters, 2 followers suffice", () => {
      const ids = ["a", "b", "c", "d", "e"];
      const c = new InMemoryRaftCluster(ids);
      c.elect("a");
      for (const id of ["b", "c", "d"]) c.isolate(id);
      c.node("a").readIndex("r");
      c.settle();
      c.tickAll(2, ["a"]);
      // a and e are two of five.
      expect(c.member("a").readStates).toEqual([]);
      c.heal();
      c.isolate("b");
      c.isolate("c");
      c.tickAll(1, ["a"]);
      // a, d and e are three of five.
      expect(c.member("a").readStates).toEqual([{ requestId: "r", index: 1 }]);
    });

    it("the index is the commit at request time, not at confirmation time", () => {
      const c = ready();
      c.filter = (m) => m.type !== "heartbeat-response";
      c.node("a").readIndex("r1");
      c.node("a").propose(text("y"));
      c.settle();
      expect(c.node("a").status().commit).toBe(3);
      expect(c.member("a").readStates).toEqual([]);
      c.filter = () => true;
      c.node("a").readIndex("r2");
      c.settle();
      expect(c.member("a").readStates).toEqual([
        { requestId: "r1", index: 2 },
        { requestId: "r2", index: 3 },
      ]);
    });

    it("an answer to an older round does not confirm a newer read", () => {
      const s = soloLeader();
      s.node.readIndex("r1");
      const hb = ofType(s.flush().messages, "heartbeat");
      expect(hb.length).toBe(2);
      const round1 = hb[0]!.readRound;
      expect(round1).toBeGreaterThan(0);
      expect(s.step(heartbeatResponse("b", "a", 1, 0)).readStates).toEqual([]);
      expect(s.step(heartbeatResponse("b", "a", 1, round1)).readStates).toEqual([
        { requestId: "r1", index: 1 },
      ]);
      s.node.readIndex("r2");
      const round2 = ofType(s.flush().messages, "heartbeat")[0]!.readRound;
      expect(round2).toBeGreaterThan(round1);
      expect(s.step(heartbeatResponse("c", "a", 1, round1)).readStates).toEqual([]);
      expect(s.step(heartbeatResponse("c", "a", 1, round2)).readStates).toEqual([
        { requestId: "r2", index: 1 },
      ]);
    });

    it("confirms several reads of one round together, in request order", () => {
      const s = soloLeader();
      s.node.readIndex("r1");
      s.node.readIndex("r2");
      s.node.readIndex("r3");
      const rounds = ofType(s.flush().messages, "heartbeat").map((m) => m.readRound);
      const h = s.step(heartbeatResponse("b", "a", 1, Math.max(...rounds)));
      expect(h.readStates.map((r) => r.requestId)).toEqual(["r1", "r2", "r3"]);
    });

    it("a single voter answers at once with its commit", () => {
      const s = new Solo({ voters: ["a"] });
      s.node.campaign();
      s.flush();
      s.node.propose(text("x"));
      s.flush();
      s.node.readIndex("r");
      expect(s.flush().readStates).toEqual([{ requestId: "r", index: 2 }]);
    });

    it("a new leader defers reads until its no-op commits", () => {
      const c = ready();
      c.isolate("a");
      c.filter = (m) => !(m.type === "append-response");
      c.tickUntil(() => ["b", "c"].some((id) => c.node(id).status().role === "leader"), 200, ["b", "c"]);
      const l = c.node("b").status().role === "leader" ? "b" : "c";
      const leader = c.node(l);
      expect(leader.status()).toMatchObject({ commit: 2, lastIndex: 3 });
      const before = c.delivered.length;
      leader.readIndex("r1");
      c.settle();
      c.tickAll(3, ["b", "c"]);
      // Heartbeats were answered, but the read waits for the no-op.
      expect(c.delivered.slice(before).some((m) => m.type === "heartbeat-response" && m.to === l)).toBe(true);
      expect(c.member(l).readStates).toEqual([]);
      expect(leader.status().commit).toBe(2);
      c.filter = () => true;
      c.tickAll(2, ["b", "c"]);
      expect(leader.status().commit).toBe(3);
      expect(c.member(l).readStates).toEqual([{ requestId: "r1", index: 3 }]);
    });

    it("reads pending on a leader that loses leadership fail with LeadershipLost", () => {
      const c = ready();
      c.isolate("a");
      c.node("a").readIndex("r1");
      c.node("a").readIndex("r2");
      c.settle();
      c.tickUntil(() => c.node("a").status().role !== "leader", 3 * T, ["a"]);
      expect(c.member("a").readStates).toEqual([]);
      expect(c.member("a").readFailures).toEqual([
        { requestId: "r1", reason: "LeadershipLost" },
        { requestId: "r2", reason: "LeadershipLost" },
      ]);
    });

    it("deferred reads fail too when the new leader is deposed before its no-op commits", () => {
      const s = new Solo();
      s.node.campaign();
      s.flush();
      s.step({ type: "pre-vote-response", from: "b", to: "a", term: 1, reject: false });
      s.step({ type: "vote-response", from: "b", to: "a", term: 1, reject: false });
      s.node.readIndex("d1");
      expect(s.flush().readStates).toEqual([]);
      const h = s.step(heartbeat("c", "a", 2));
      expect(h.readFailures).toEqual([{ requestId: "d1", reason: "LeadershipLost" }]);
    });
  });

  describe("from a follower", () => {
    it("is forwarded to the leader and answered through it", () => {
      const c = ready();
      const before = c.delivered.length;
      c.node("b").readIndex("f1");
      c.settle();
      expect(c.member("b").readStates).toEqual([{ requestId: "f1", index: 2 }]);
      const trace = c.delivered.slice(before).map((m) => `${m.type}:${m.from}->${m.to}`);
      expect(trace).toContain("read-index:b->a");
      expect(trace).toContain("read-index-response:a->b");
      expect(trace.indexOf("read-index:b->a")).toBeLessThan(trace.indexOf("read-index-response:a->b"));
      expect(c.member("a").readStates).toEqual([]);
    });

    it("the forwarded read waits for the leader's quorum round too", () => {
      const c = ready();
      c.cut.add("c->a");
      c.filter = (m) => !(m.type === "heartbeat-response");
      c.node("b").readIndex("f1");
      c.settle();
      c.tickAll(1, ["a"]);
      expect(c.member("b").readStates).toEqual([]);
      c.filter = () => true;
      c.tickAll(1, ["a"]);
      expect(c.member("b").readStates).toEqual([{ requestId: "f1", index: 2 }]);
    });

    it("is refused with NoLeader on a node that knows no leader", () => {
      const s = new Solo();
      let err: unknown;
      try {
        s.node.readIndex("r");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ProposalRefusedError);
      expect((err as ProposalRefusedError).reason).toBe("NoLeader");
      expect(s.node.hasReady()).toBe(false);
    });

    it("fails with NotLeader when the node it asked is not the leader", () => {
      const s = new Solo();
      s.step(heartbeat("b", "a", 1));
      s.node.readIndex("q");
      expect(ofType(s.flush().messages, "read-index")).toMatchObject([{ to: "b", requestId: "q" }]);
      const h = s.step({
        type: "read-index-response",
        from: "b",
        to: "a",
        term: 1,
        requestId: "q",
        index: 0,
        reject: true,
      });
      expect(h.readFailures).toEqual([{ requestId: "q", reason: "NotLeader" }]);
      // A follower asked to serve a read refuses it.
      const other = new Solo({ id: "b" });
      other.step(heartbeat("a", "b", 1));
      const r = other.step({ type: "read-index", from: "c", to: "b", term: 1, requestId: "z" });
      expect(ofType(r.messages, "read-index-response")).toMatchObject([
        { to: "c", requestId: "z", reject: true },
      ]);
    });

    it("ignores an answer to a read it did not forward (or already settled)", () => {
      const s = new Solo();
      s.step(heartbeat("b", "a", 1));
      s.node.readIndex("q");
      s.flush();
      const answer = {
        type: "read-index-response",
        from: "b",
        to: "a",
        term: 1,
        requestId: "q",
        index: 4,
        reject: false,
      } as const;
      expect(s.step(answer).readStates).toEqual([{ requestId: "q", index: 4 }]);
      expect(s.step(answer).readStates).toEqual([]);
      expect(s.step({ ...answer, requestId: "never" }).readStates).toEqual([]);
    });

    it("a forwarded read with no answer fails after an election timeout", () => {
      const s = new Solo({ electionTicks: T, random: new ScriptedRandom([], T - 1) });
      s.step(heartbeat("b", "a", 1));
      s.node.readIndex("q");
      s.flush();
      expect(s.tick(T - 1).readFailures).toEqual([]);
      expect(s.tick(1).readFailures).toEqual([{ requestId: "q", reason: "LeadershipLost" }]);
      // A late answer is ignored.
      const h = s.step({
        type: "read-index-response",
        from: "b",
        to: "a",
        term: 1,
        requestId: "q",
        index: 4,
        reject: false,
      });
      expect(h.readStates).toEqual([]);
    });

    it("a forwarded read fails when the follower learns of a newer term", () => {
      const s = new Solo();
      s.step(heartbeat("b", "a", 1));
      s.node.readIndex("q");
      s.flush();
      const h = s.step(heartbeat("c", "a", 2));
      expect(h.readFailures).toEqual([{ requestId: "q", reason: "LeadershipLost" }]);
    });

    it("a forwarded read whose link is cut in a cluster fails within an election timeout", () => {
      const c = ready();
      c.cut.add("b->a");
      c.node("b").readIndex("f");
      c.settle();
      c.tickAll(T, ["a", "b", "c"]);
      expect(c.member("b").readStates).toEqual([]);
      expect(c.member("b").readFailures).toEqual([{ requestId: "f", reason: "LeadershipLost" }]);
      expect(c.node("a").status().role).toBe("leader");
    });
  });
});
