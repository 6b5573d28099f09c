import { afterEach, describe, expect, it, vi } from "vitest";
import type { MemoryStorage } from "./memory-storage.js";
import { RaftNode } from "./raft-node.js";
import { SeededRandom } from "./seeded-random.js";
import {
  append,
  entry,
  heartbeat,
  heartbeatResponse,
  ofType,
  ScriptedRandom,
  Solo,
  snapshotChunk,
  storageWithLog,
  vote,
  voteResponse,
} from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { InvariantChecker } from "./test-fixtures/invariants.js";
import type { Message } from "./types.js";

const VOTERS = ["a", "b", "c"];

/** A Solo node "a" that has become a candidate in term `term` (pre-vote won via b). */
function candidate(storage?: MemoryStorage): Solo {
  const s = new Solo(storage ? { storage } : {});
  s.node.campaign();
  const pre = ofType(s.flush().messages, "pre-vote");
  const term = s.node.status().term + 1;
  expect(pre.map((m) => m.term)).toEqual([term, term]);
  s.step(voteResponse("b", "a", term, false, true));
  expect(s.node.status().role).toBe("candidate");
  return s;
}

describe("elections", () => {
  it("a campaign that wins increments the term and every node records its vote", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    expect(c.node("a").status().term).toBe(0);
    c.elect("a");
    for (const id of VOTERS) {
      const st = c.node(id).status();
      expect(st.term).toBe(1);
      expect(st.vote).toBe("a");
      expect(st.leader).toBe("a");
      expect(c.member(id).storage.initialState().hardState).toMatchObject({ term: 1, vote: "a" });
    }
    expect(c.node("a").status().role).toBe("leader");
  });

  it("a candidate increments its term, votes for itself durably and asks every peer", () => {
    const s = new Solo();
    s.node.campaign();
    s.flush();
    const h = s.step(voteResponse("b", "a", 1, false, true));
    expect(s.node.status()).toMatchObject({ role: "candidate", term: 1, vote: "a", leader: null });
    expect(h.hardStates.at(-1)).toMatchObject({ term: 1, vote: "a" });
    const votes = ofType(h.messages, "vote");
    expect(votes.map((m) => m.to).sort()).toEqual(["b", "c"]);
    for (const m of votes) expect(m).toMatchObject({ term: 1, index: 0, logTerm: 0, transfer: false });
  });

  it("a single voter elects itself at once and commits its no-op", () => {
    const s = new Solo({ voters: ["a"] });
    s.node.campaign();
    const h = s.flush();
    expect(s.node.status()).toMatchObject({ role: "leader", term: 1, commit: 1 });
    expect(h.committed.map((e) => e.type)).toEqual(["noop"]);
  });

  it("a single voter elects itself when its election timeout fires", () => {
    const s = new Solo({ voters: ["a"], random: new ScriptedRandom([], 0), electionTicks: 5 });
    s.tick(4);
    expect(s.node.status().role).toBe("follower");
    s.tick(1);
    expect(s.node.status().role).toBe("leader");
  });

  describe("voting", () => {
    it("votes at most once per term, but repeats its grant to the same candidate", () => {
      const s = new Solo();
      let h = s.step(vote("b", "a", 1, 0, 0));
      expect(ofType(h.messages, "vote-response")).toEqual([
        { type: "vote-response", from: "a", to: "b", term: 1, reject: false },
      ]);
      expect(s.storage.initialState().hardState).toMatchObject({ term: 1, vote: "b" });

      h = s.step(vote("c", "a", 1, 0, 0));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "c", reject: true }]);
      expect(s.node.status().vote).toBe("b");

      h = s.step(vote("b", "a", 1, 0, 0));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "b", reject: false }]);
    });

    it("the vote survives a restart from storage", () => {
      const s = new Solo();
      s.step(vote("b", "a", 1, 0, 0));
      const restarted = new Solo({ storage: s.storage });
      expect(restarted.node.status()).toMatchObject({ term: 1, vote: "b" });
      const h = restarted.step(vote("c", "a", 1, 0, 0));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "c", reject: true }]);
    });

    it("rejects a candidate whose last term is lower, even with a longer log", () => {
      const s = new Solo({ storage: storageWithLog(VOTERS, [1, 2], { term: 2 }) });
      const h = s.step(vote("b", "a", 3, 9, 1));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "b", term: 3, reject: true }]);
      // The higher term is adopted all the same, with no vote.
      expect(s.node.status()).toMatchObject({ term: 3, vote: null });
    });

    it("rejects a candidate with the same last term but a shorter log", () => {
      const s = new Solo({ storage: storageWithLog(VOTERS, [1, 2, 2], { term: 2 }) });
      const h = s.step(vote("b", "a", 3, 2, 2));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ reject: true }]);
      expect(s.node.status().vote).toBeNull();
    });

    it.each([
      ["same last term, same length", 3, 2],
      ["same last term, longer log", 7, 2],
      ["higher last term, shorter log", 1, 3],
    ])("grants a candidate with an up-to-date log (%s)", (_name, index, logTerm) => {
      const s = new Solo({ storage: storageWithLog(VOTERS, [1, 2, 2], { term: 2 }) });
      const h = s.step(vote("b", "a", 3, index, logTerm));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "b", term: 3, reject: false }]);
      expect(s.node.status()).toMatchObject({ term: 3, vote: "b" });
    });

    it("a node that already follows a leader in this term refuses other candidates of that term", () => {
      const s = new Solo();
      s.step(heartbeat("b", "a", 2));
      expect(s.node.status()).toMatchObject({ term: 2, leader: "b", vote: null });
      const h = s.step(vote("c", "a", 2, 0, 0));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ reject: true }]);
    });

    it("a leader or candidate refuses a vote request of its own term", () => {
      const s = candidate();
      const h = s.step(vote("c", "a", 1, 0, 0));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "c", reject: true }]);
      expect(s.node.status()).toMatchObject({ role: "candidate", vote: "a" });
    });
  });

  describe("terms", () => {
    const higher: [string, (t: number) => Message, string | null][] = [
      ["append", (t) => append("b", "a", t, 0, 0, [], 0), "b"],
      ["heartbeat", (t) => heartbeat("b", "a", t), "b"],
      [
        "snapshot-chunk",
        (t) =>
          snapshotChunk(
            "b",
            "a",
            t,
            { index: 0, term: 0, conf: { voters: VOTERS } },
            0,
            new Uint8Array(),
            0,
            0,
          ),
        "b",
      ],
      [
        "append-response",
        (t) => ({
          type: "append-response",
          from: "b",
          to: "a",
          term: t,
          index: 0,
          reject: true,
          rejectHint: 0,
          logTerm: 0,
          epoch: 0,
        }),
        null,
      ],
      ["heartbeat-response", (t) => heartbeatResponse("b", "a", t), null],
      ["vote-response (rejected)", (t) => voteResponse("b", "a", t, true), null],
      ["pre-vote-response (rejected)", (t) => voteResponse("b", "a", t, true, true), null],
      [
        "snapshot-chunk-response",
        (t) => ({
          type: "snapshot-chunk-response",
          from: "b",
          to: "a",
          term: t,
          snapshotIndex: 1,
          snapshotTerm: 1,
          nextOffset: 0,
          reject: false,
        }),
        null,
      ],
      ["read-index", (t) => ({ type: "read-index", from: "b", to: "a", term: t, requestId: "r" }), null],
      [
        "read-index-response",
        (t) => ({
          type: "read-index-response",
          from: "b",
          to: "a",
          term: t,
          requestId: "r",
          index: 0,
          reject: true,
        }),
        null,
      ],
      ["timeout-now", (t) => ({ type: "timeout-now", from: "b", to: "a", term: t }), null],
    ];

    it.each(higher)(
      "a candidate seeing a higher term in %s becomes a follower in it, vote cleared",
      (_n, make, leader) => {
        const s = candidate();
        expect(s.node.status()).toMatchObject({ term: 1, vote: "a" });
        const h = s.step(make(7));
        expect(s.node.status()).toMatchObject({ role: "follower", term: 7, vote: null, leader });
        expect(s.storage.initialState().hardState).toMatchObject({ term: 7, vote: null });
        // Nothing it sends afterwards carries the old term.
        for (const m of h.messages) expect(m.term).toBe(7);
      },
    );

    it.each(higher.filter(([n]) => !["append", "heartbeat", "snapshot-chunk"].includes(n)))(
      "a leader seeing a higher term in %s steps down",
      (_n, make) => {
        const c = new InMemoryRaftCluster(VOTERS);
        c.elect("a");
        c.node("a").step(make(5));
        expect(c.node("a").status()).toMatchObject({ role: "follower", term: 5, vote: null, leader: null });
      },
    );

    it("a pre-vote of a higher term changes neither the term nor the vote", () => {
      const s = new Solo({ storage: storageWithLog(VOTERS, [1], { term: 2, vote: "c" }) });
      const h = s.step(vote("b", "a", 3, 1, 1, { pre: true }));
      expect(ofType(h.messages, "pre-vote-response")).toMatchObject([{ to: "b", term: 3, reject: false }]);
      expect(s.node.status()).toMatchObject({ term: 2, vote: "c" });
      expect(h.hardStates).toEqual([]);
    });

    describe("stale-term messages are ignored", () => {
      const at3 = (): Solo => {
        const s = new Solo({ storage: storageWithLog(VOTERS, [1, 3], { term: 3, vote: "c", commit: 1 }) });
        s.step(heartbeat("c", "a", 3, 1));
        return s;
      };

      it("a vote request: no answer, vote kept", () => {
        const s = at3();
        const h = s.step(vote("b", "a", 2, 10, 2));
        expect(h.messages).toEqual([]);
        expect(s.node.status()).toMatchObject({ term: 3, vote: "c", leader: "c" });
      });

      it("a pre-vote: refused with the newer term", () => {
        const s = at3();
        const h = s.step(vote("b", "a", 2, 10, 2, { pre: true }));
        expect(h.messages).toEqual([
          { type: "pre-vote-response", from: "a", to: "b", term: 3, reject: true },
        ]);
      });

      it("an append: log untouched, answered with the newer term", () => {
        const s = at3();
        const h = s.step(append("b", "a", 2, 1, 1, [entry(2, 2, "stale")], 2));
        expect(s.terms()).toEqual([1, 3]);
        expect(s.node.status()).toMatchObject({ term: 3, leader: "c", commit: 1 });
        expect(h.messages).toMatchObject([{ type: "append-response", to: "b", term: 3 }]);
      });

      it("a heartbeat: commit untouched, answered with the newer term", () => {
        const s = at3();
        const h = s.step(heartbeat("b", "a", 2, 2));
        expect(s.node.status()).toMatchObject({ commit: 1, leader: "c" });
        expect(h.messages).toMatchObject([{ type: "append-response", to: "b", term: 3 }]);
      });

      it("timeout-now, read-index and responses: no effect", () => {
        const s = at3();
        const h = s.step(
          { type: "timeout-now", from: "c", to: "a", term: 2 },
          { type: "read-index", from: "b", to: "a", term: 2, requestId: "x" },
          voteResponse("b", "a", 2, false),
          heartbeatResponse("b", "a", 2),
        );
        expect(h.messages).toEqual([]);
        expect(s.node.status()).toMatchObject({ role: "follower", term: 3, leader: "c" });
      });
    });

    it("a stale leader steps down on the answer to its append, and its entry is overwritten", () => {
      const checker = new InvariantChecker();
      const c = new InMemoryRaftCluster(VOTERS, {}, 1, { onReady: checker.hook });
      c.elect("a");
      c.node("a").propose(text("x"));
      c.settle();
      c.isolate("a");
      // Only b and c tick: a still believes it leads term 1.
      c.tickUntil(
        () => c.node("b").status().role === "leader" || c.node("c").status().role === "leader",
        100,
        ["b", "c"],
      );
      const newLeader = c.node("b").status().role === "leader" ? "b" : "c";
      const newTerm = c.node(newLeader).status().term;
      expect(newTerm).toBeGreaterThan(1);
      expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });

      c.heal();
      c.node("a").propose(text("stale"));
      c.settle();
      expect(c.node("a").status()).toMatchObject({ role: "follower", term: newTerm });

      c.node(newLeader).propose(text("fresh"));
      c.settle();
      c.tickAll(3);
      for (const id of VOTERS) expect(c.appliedData(id)).toEqual(["x", "fresh"]);
    });
  });

  describe("losing", () => {
    it("a candidate refused by a majority becomes a follower in its term, keeping its vote", () => {
      const s = candidate();
      s.step(voteResponse("b", "a", 1, true));
      expect(s.node.status().role).toBe("candidate");
      s.step(voteResponse("c", "a", 1, true));
      expect(s.node.status()).toMatchObject({ role: "follower", term: 1, vote: "a", leader: null });
    });

    it("a candidate hearing from the leader of its term becomes its follower", () => {
      const s = candidate();
      s.step(append("c", "a", 1, 0, 0, [], 0));
      expect(s.node.status()).toMatchObject({ role: "follower", term: 1, leader: "c", vote: "a" });
    });

    it("a candidate ignores votes of an earlier pre-vote round and of other kinds", () => {
      const s = candidate();
      s.step(voteResponse("c", "a", 1, false, true));
      expect(s.node.status().role).toBe("candidate");
      s.step(voteResponse("c", "a", 1, false));
      expect(s.node.status().role).toBe("leader");
    });

    it("without a majority a candidate stays put, then retries in a new term after a timeout", () => {
      const s = candidate(); // term 1, no answers
      s.flush();
      expect(s.node.status().term).toBe(1);
      let h = s.tick(25);
      // Retrying starts with a pre-vote for term 2; the term itself is unchanged.
      expect(ofType(h.messages, "pre-vote").length).toBeGreaterThan(0);
      expect(s.node.status()).toMatchObject({ role: "pre-candidate", term: 1 });
      h = s.step(voteResponse("b", "a", 2, false, true));
      expect(s.node.status()).toMatchObject({ role: "candidate", term: 2, vote: "a" });
      expect(ofType(h.messages, "vote").every((m) => m.term === 2)).toBe(true);
    });
  });

  describe("randomized election timeouts", () => {
    /** Ticks at which a lone node (no answers) starts a (pre-)campaign. */
    function campaignTicks(
      random: SeededRandom | ScriptedRandom,
      ticks: number,
      electionTicks = 10,
    ): number[] {
      const s = new Solo({ random, electionTicks });
      const at: number[] = [];
      for (let t = 1; t <= ticks; t++) {
        const h = s.tick();
        if (ofType(h.messages, "pre-vote").length > 0) at.push(t);
      }
      return at;
    }

    it("wait T + the injected random value, drawn with bound T", () => {
      const random = new ScriptedRandom([3, 0, 9, 5]);
      expect(campaignTicks(random, 60)).toEqual([13, 23, 42, 57]);
      expect(new Set(random.bounds)).toEqual(new Set([10]));
    });

    it("lie in [T, 2T) and use the whole range", () => {
      const at = campaignTicks(new SeededRandom(5), 4000, 10);
      const gaps = at.map((t, i) => t - (i === 0 ? 0 : at[i - 1]!));
      expect(gaps.length).toBeGreaterThan(200);
      expect(Math.min(...gaps)).toBe(10);
      expect(Math.max(...gaps)).toBe(19);
      expect(new Set(gaps).size).toBe(10);
    });

    it("are the same for the same seed and differ for another seed", () => {
      expect(campaignTicks(new SeededRandom(11), 500)).toEqual(campaignTicks(new SeededRandom(11), 500));
      expect(campaignTicks(new SeededRandom(11), 500)).not.toEqual(campaignTicks(new SeededRandom(12), 500));
    });

    afterEach(() => {
      vi.restoreAllMocks();
    });

    it("never come from Math.random", () => {
      const spy = vi.spyOn(Math, "random");
      const c = new InMemoryRaftCluster(["a", "b", "c", "d", "e"], {}, 3);
      c.tickUntil(() => c.leader() !== null, 200);
      c.isolate(c.leader()!);
      c.tickAll(60);
      expect(spy).not.toHaveBeenCalled();
    });

    it("a follower that hears from its leader never times out", () => {
      const c = new InMemoryRaftCluster(VOTERS);
      c.elect("a");
      c.tickAll(200);
      expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });
      for (const id of ["b", "c"]) expect(c.node(id).status()).toMatchObject({ role: "follower", term: 1 });
    });
  });

  describe("election timer", () => {
    const T = 10;
    /** A follower with no leader whose election timeout is exactly T. */
    const idle = (): Solo => new Solo({ electionTicks: T, random: new ScriptedRandom([], 0) });
    const campaigned = (h: { messages: Message[] }): boolean => ofType(h.messages, "pre-vote").length > 0;

    it("granting a vote restarts the timer", () => {
      const s = idle();
      expect(campaigned(s.tick(T - 1))).toBe(false);
      s.step(vote("b", "a", 1, 0, 0));
      expect(campaigned(s.tick(T - 1))).toBe(false);
      expect(campaigned(s.tick(1))).toBe(true);
    });

    it("granting a pre-vote or refusing a vote does not", () => {
      const s = idle();
      s.tick(T - 2);
      s.step(vote("b", "a", 1, 0, 0, { pre: true }));
      expect(campaigned(s.tick(1))).toBe(false);
      expect(campaigned(s.tick(1))).toBe(true);

      // Refused within its own term (a higher term would restart the timer through the term change).
      const t = new Solo({
        electionTicks: T,
        random: new ScriptedRandom([], 0),
        storage: storageWithLog(VOTERS, [2], { term: 2 }),
      });
      t.tick(T - 1);
      const h = t.step(vote("b", "a", 2, 5, 1));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ reject: true }]);
      expect(campaigned(t.tick(1))).toBe(true);
    });

    it("hearing from the leader restarts the timer", () => {
      const s = idle();
      for (let i = 0; i < 5; i++) {
        s.tick(T - 1);
        s.step(heartbeat("b", "a", 1));
      }
      expect(s.node.status()).toMatchObject({ role: "follower", leader: "b" });
      expect(campaigned(s.tick(T))).toBe(true);
    });

    it("a leader heartbeats every heartbeatTicks ticks", () => {
      const c = new InMemoryRaftCluster(VOTERS, { heartbeatTicks: 3, electionTicks: 12 });
      c.elect("a");
      const before = c.sent.length;
      c.tickAll(9);
      const hb = c.sent.slice(before).filter((m) => m.type === "heartbeat" && m.to === "b");
      expect(hb).toHaveLength(3);
    });
  });

  it("drops messages not addressed to it, vote requests from non-voters, and its own", () => {
    const s = new Solo();
    const h = s.step(vote("b", "z", 5, 0, 0), vote("zz", "a", 5, 0, 0), vote("a", "a", 5, 0, 0));
    expect(h.messages).toEqual([]);
    expect(s.node.status()).toMatchObject({ term: 0, vote: null, leader: null });
  });

  it("elects exactly one leader per term over many seeded elections", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const checker = new InvariantChecker();
      const c = new InMemoryRaftCluster(["a", "b", "c", "d", "e"], {}, seed * 10, { onReady: checker.hook });
      c.tickUntil(() => c.leader() !== null, 300);
      // Crash the leader twice more; a new one must emerge each time.
      for (let k = 0; k < 2; k++) {
        const old = c.leader()!;
        c.isolate(old);
        const others = c.ids.filter((id) => id !== old);
        c.tickUntil(() => others.some((id) => c.node(id).status().role === "leader"), 300, others);
        c.heal();
        c.tickAll(5);
      }
      expect(checker.leaders.size).toBeGreaterThanOrEqual(3);
    }
  });

  it("a restarted node resumes its term and vote and forgets the leader", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("b");
    c.restart("c");
    expect(c.node("c").status()).toMatchObject({ term: 1, vote: "b", leader: null, role: "follower" });
    expect(
      new RaftNode({
        id: "a",
        storage: c.member("a").storage,
        random: new SeededRandom(1),
      }).status().term,
    ).toBe(1);
  });
});
