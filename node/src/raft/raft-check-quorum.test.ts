import { describe, expect, it } from "vitest";
import { ProposalRefusedError } from "./errors.js";
import { heartbeat, ofType, ScriptedRandom, Solo, vote } from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

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

describe("check-quorum", () => {
  it("an isolated leader steps down within two election timeouts (not before one) and then refuses work", () => {
    const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T });
    c.elect("a");
    c.tickAll(3);
    c.isolate("a");
    let ticks = 0;
    while (c.node("a").status().role === "leader" && ticks < 5 * T) {
      c.tick("a");
      c.settle();
      ticks++;
    }
    expect(ticks).toBeGreaterThanOrEqual(T - 3);
    expect(ticks).toBeLessThanOrEqual(2 * T);
    expect(c.node("a").status()).toMatchObject({ role: "follower", leader: null, term: 1 });
    expect(refusal(() => c.node("a").propose(text("x"))).reason).toBe("NoLeader");
    expect(refusal(() => c.node("a").readIndex("r")).reason).toBe("NoLeader");
  });

  it("a freshly elected leader that is cut off at once also steps down", () => {
    const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T });
    c.elect("a");
    c.isolate("a");
    c.tick("a", 2 * T);
    c.settle();
    expect(c.node("a").status().role).toBe("follower");
  });

  it("a new leader counts as active only itself and the voters that elected it, until the others answer", () => {
    const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T });
    c.isolate("c");
    c.elect("a");
    const active = () => Object.entries(c.node("a").status().progress).map(([id, pr]) => [id, pr.active]);
    // A membership check made now must not count c, which may have been down all along.
    expect(active()).toEqual([
      ["a", true],
      ["b", true],
      ["c", false],
    ]);
    c.heal();
    c.tickAll(1);
    expect(active()).toEqual([
      ["a", true],
      ["b", true],
      ["c", true],
    ]);
  });

  it("a leader that hears from a quorum keeps leading indefinitely, even with one follower down", () => {
    const c = new InMemoryRaftCluster(VOTERS, { electionTicks: T });
    c.elect("a");
    c.isolate("c");
    for (let i = 0; i < 20; i++) {
      c.tickAll(T, ["a", "b"]);
      expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });
    }
  });

  it("a leader whose followers all went silent steps down (5 voters, 3 down)", () => {
    const ids = ["a", "b", "c", "d", "e"];
    const c = new InMemoryRaftCluster(ids, { electionTicks: T });
    c.elect("a");
    for (const id of ["c", "d", "e"]) c.isolate(id);
    c.tickAll(2 * T, ["a", "b"]);
    expect(c.node("a").status().role).toBe("follower");
  });

  describe("leader lease", () => {
    /** Follower "a" of leader "b" in term 1, whose election timeout is 2T-1 (so T ticks do not fire it). */
    const follower = (): Solo => {
      const s = new Solo({ electionTicks: T, random: new ScriptedRandom([], T - 1) });
      s.step(heartbeat("b", "a", 1));
      expect(s.node.status()).toMatchObject({ leader: "b", term: 1 });
      return s;
    };

    it.each([false, true])(
      "a follower that heard from its leader ignores a disruptive vote (pre-vote=%s)",
      (pre) => {
        const s = follower();
        s.tick(T - 1);
        const h = s.step(vote("c", "a", 2, 5, 5, { pre }));
        expect(h.messages).toEqual([]);
        expect(s.node.status()).toMatchObject({ term: 1, vote: null, leader: "b" });
      },
    );

    it.each([false, true])("once the lease expired the same request is considered (pre-vote=%s)", (pre) => {
      const s = follower();
      s.tick(T);
      expect(s.node.status().role).toBe("follower");
      const h = s.step(vote("c", "a", 2, 5, 5, { pre }));
      expect(ofType(h.messages, pre ? "pre-vote-response" : "vote-response")).toMatchObject([
        { to: "c", reject: false },
      ]);
      expect(s.node.status().term).toBe(pre ? 1 : 2);
    });

    it("a vote of a leadership transfer is considered despite the lease", () => {
      const s = follower();
      const h = s.step(vote("c", "a", 2, 5, 5, { transfer: true }));
      expect(ofType(h.messages, "vote-response")).toMatchObject([{ to: "c", term: 2, reject: false }]);
      expect(s.node.status()).toMatchObject({ term: 2, vote: "c" });
    });

    it("a follower that campaigns by hand while the leader is healthy does not disrupt it", () => {
      const c = new InMemoryRaftCluster(VOTERS);
      c.elect("a");
      c.node("a").propose(text("x"));
      c.settle();
      c.elect("b");
      expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });
      expect(c.node("c").status()).toMatchObject({ term: 1, leader: "a" });
      c.tickAll(2);
      expect(c.node("b").status()).toMatchObject({ role: "follower", term: 1, leader: "a" });
      c.node("a").propose(text("y"));
      c.settle();
      c.tickAll(1);
      expect(c.appliedData("b")).toEqual(["x", "y"]);
    });

    it("a leader ignores higher-term vote requests while it has a quorum", () => {
      const c = new InMemoryRaftCluster(VOTERS);
      c.elect("a");
      c.node("a").step(vote("b", "a", 9, 100, 9));
      expect(c.node("a").status()).toMatchObject({ role: "leader", term: 1 });
    });
  });
});
