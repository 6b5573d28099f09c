import { describe, expect, it } from "vitest";
import { RaftInvariantError } from "./errors.js";
import type { MemoryStorage } from "./memory-storage.js";
import type { RaftOptions } from "./raft-config.js";
import { RaftNode } from "./raft-node.js";
import { SeededRandom } from "./seeded-random.js";
import { append, drain, entriesWithTerms, Solo, storageWithLog } from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";
import { InvariantChecker } from "./test-fixtures/invariants.js";
import type { Message } from "./types.js";

const VOTERS = ["a", "b", "c"];

/** A deliberately broken core that commits by counting replicas whatever the entry's term. */
class CountingCore extends RaftNode {
  protected override commitAllowed(_index: number): boolean {
    return true;
  }
}
const broken = (o: RaftOptions): RaftNode => new CountingCore(o);

function termAt(c: InMemoryRaftCluster, id: string, index: number): number | null {
  const s = c.member(id).storage;
  if (index > s.lastIndex() || index < s.firstIndex() - 1) return null;
  return s.term(index);
}

describe("commitment", () => {
  describe("figure 8: only entries of the current term commit by counting", () => {
    /**
     * 3 voters, one entry per message. a (term 1) gets entry 2 onto b only, then dies; b wins term 2
     * and replicates entry 2 to c but not its own no-op (entry 3). Entry 2 is on a majority.
     */
    function scenario(createNode?: (o: RaftOptions) => RaftNode): InMemoryRaftCluster {
      const c = new InMemoryRaftCluster(VOTERS, { maxSizePerMsg: 1 }, 1, createNode ? { createNode } : {});
      c.elect("a");
      c.cut.add("a->c");
      c.filter = (m) => !(m.type === "append-response" && m.from === "b");
      c.node("a").propose(text("x"));
      c.settle();
      expect(c.node("a").status().commit).toBe(1);
      c.isolate("a");
      // b's no-op (entry 3) may not reach c once c could accept it; earlier probes, which c must
      // reject to learn what it lacks, go through.
      c.filter = (m) =>
        !(
          m.type === "append" &&
          m.from === "b" &&
          m.entries.some((e) => e.index >= 3) &&
          c.node(m.to).status().lastIndex >= 2
        );
      c.tickUntil(() => c.node("b").status().role === "leader", 200, ["b", "c"]);
      c.settle();
      expect(termAt(c, "b", 2)).toBe(1);
      expect(termAt(c, "c", 2)).toBe(1);
      expect(termAt(c, "c", 3)).toBeNull();
      expect(c.node("b").status().progress.c!.match).toBe(2);
      return c;
    }

    it("an old-term entry on a majority is not committed until a current-term entry is", () => {
      const c = scenario();
      expect(c.node("b").status().commit).toBe(1);
      expect(c.appliedData("b")).toEqual([]);
      // Let the no-op through: it commits, and entry 2 with it.
      c.filter = () => true;
      c.tickAll(2);
      expect(c.node("b").status().commit).toBe(3);
      expect(c.appliedData("b")).toEqual(["x"]);
      expect(c.appliedData("c")).toEqual(["x"]);
    });

    it("(control) a core that commits by counting commits it at once", () => {
      const c = scenario(broken);
      expect(c.node("b").status().commit).toBe(2);
    });

    /**
     * The paper's 5-server figure 8: s1 (term 1) puts entry 2 on s2; s5 wins term 2 and writes its
     * own entry 2 nowhere else; s1 wins term 3 and spreads its entry 2 to a majority (but not its
     * no-op 3); s1 dies; s5 can still win term 4 and overwrite entry 2 everywhere.
     */
    function figure8(createNode?: (o: RaftOptions) => RaftNode): {
      c: InMemoryRaftCluster;
      s1CommitAtPeak: number;
    } {
      const ids = ["s1", "s2", "s3", "s4", "s5"];
      const checker = new InvariantChecker();
      const c = new InMemoryRaftCluster(ids, { maxSizePerMsg: 1 }, 1, {
        onReady: checker.hook,
        ...(createNode ? { createNode } : {}),
      });
      const retryElect = (id: string): void => {
        for (let i = 0; i < 3 && c.node(id).status().role !== "leader"; i++) c.elect(id);
        expect(c.node(id).status().role).toBe("leader");
      };
      c.elect("s1");
      // (a) s1 puts x at index 2 on s2 only.
      for (const to of ["s3", "s4", "s5"]) c.cut.add(`s1->${to}`);
      c.node("s1").propose(text("x"));
      c.settle();
      // (b) s1 crashes; s5 wins term 2 with s3 and s4 and appends index 2 nowhere else.
      c.isolate("s1");
      c.restart("s3");
      c.restart("s4");
      c.filter = (m) => !(m.from === "s5" && m.type === "append");
      retryElect("s5");
      expect(c.node("s5").status().term).toBe(2);
      expect(termAt(c, "s5", 2)).toBe(2);
      // (c) s5 crashes; s1 recovers, wins term 3, and copies its index 2 to s3 and s4, not its no-op.
      c.heal();
      c.isolate("s5");
      c.restart("s1");
      c.restart("s3");
      c.restart("s4");
      c.filter = (m: Message) =>
        !(
          m.type === "append" &&
          m.from === "s1" &&
          m.entries.some((e) => e.index >= 3) &&
          c.node(m.to).status().lastIndex >= 2
        );
      retryElect("s1");
      expect(c.node("s1").status().term).toBe(3);
      const holders = ids.filter((id) => termAt(c, id, 2) === 1);
      expect(holders).toEqual(["s1", "s2", "s3", "s4"]);
      const s1CommitAtPeak = c.node("s1").status().commit;
      // (d) s1 crashes; s5 recovers and, with the freshest last term, wins term 4.
      c.heal();
      c.isolate("s1");
      c.filter = () => true;
      for (const id of ["s2", "s3", "s4", "s5"]) c.restart(id);
      retryElect("s5");
      c.tickAll(3, ["s2", "s3", "s4", "s5"]);
      return { c, s1CommitAtPeak };
    }

    it("the 5-server scenario: the entry is never committed, so its later overwrite is safe", () => {
      const { c, s1CommitAtPeak } = figure8();
      expect(s1CommitAtPeak).toBe(1);
      for (const id of ["s2", "s3", "s4", "s5"]) {
        expect(termAt(c, id, 2)).toBe(2);
        expect(c.node(id).status().commit).toBeGreaterThanOrEqual(3);
        expect(c.appliedData(id)).toEqual([]);
      }
      expect(c.appliedData("s1")).toEqual([]);
    });

    it("(control) the same scenario with a counting core violates state machine safety", () => {
      expect(() => figure8(broken)).toThrow(
        /leader completeness: new leader lacks applied entry 2@1|state machine safety/,
      );
    });
  });

  it("a new leader appends a no-op of its term, which commits and is applied everywhere", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.node("a").propose(text("x"));
    c.settle();
    c.isolate("a");
    c.tickUntil(() => c.node("b").status().role === "leader" || c.node("c").status().role === "leader", 200, [
      "b",
      "c",
    ]);
    const l = c.node("b").status().role === "leader" ? "b" : "c";
    const { term, lastIndex } = c.node(l).status();
    const stored = c.member(l).storage.entries(lastIndex, lastIndex + 1, 1e9)[0]!;
    expect(stored).toMatchObject({ index: 3, term, type: "noop" });
    expect(stored.data.byteLength).toBe(0);
    expect(c.node(l).status().commit).toBe(3);
    const other = l === "b" ? "c" : "b";
    expect(c.member(other).applied.map((e) => [e.index, e.type])).toEqual([
      [1, "noop"],
      [2, "normal"],
      [3, "noop"],
    ]);
  });

  it("entries of earlier terms commit with the new leader's no-op", () => {
    const c = new InMemoryRaftCluster(VOTERS);
    c.elect("a");
    c.filter = (m) => !(m.type === "append-response" && m.to === "a");
    c.node("a").propose(text("old"));
    c.settle();
    expect(c.node("a").status().commit).toBe(1);
    c.filter = () => true;
    c.isolate("a");
    c.tickUntil(() => c.node("b").status().role === "leader" || c.node("c").status().role === "leader", 200, [
      "b",
      "c",
    ]);
    for (const id of ["b", "c"]) expect(c.appliedData(id)).toEqual(["old"]);
  });

  it("a leader needs a majority: one follower of four is not enough", () => {
    const ids = ["a", "b", "c", "d", "e"];
    const c = new InMemoryRaftCluster(ids);
    c.elect("a");
    for (const id of ["c", "d", "e"]) c.isolate(id);
    c.node("a").propose(text("x"));
    c.settle();
    expect(c.node("a").status().commit).toBe(1);
    c.heal();
    c.cut.add("a->e");
    c.cut.add("a->d");
    c.tickAll(1);
    expect(c.node("a").status().commit).toBe(2);
  });

  describe("cluster sizes", () => {
    it("a single voter commits each proposal once it is durable, and never steps down", () => {
      const s = new Solo({ voters: ["a"] });
      s.node.campaign();
      s.flush();
      s.node.propose(text("x"));
      const rd = s.node.ready();
      expect(rd.entries.map((e) => e.index)).toEqual([2]);
      // Not before it is persisted: the leader's own copy counts only once durable.
      expect(rd.committedEntries).toEqual([]);
      expect(rd.messages).toEqual([]);
      s.storage.append(rd.entries);
      s.node.advance();
      const next = s.node.ready();
      expect(next.committedEntries.map((e) => e.index)).toEqual([2]);
      s.node.advance();
      s.tick(100);
      expect(s.node.status()).toMatchObject({ role: "leader", term: 1, commit: 2, applied: 2 });
    });

    it("two voters need each other: one alone neither commits nor keeps leading", () => {
      const c = new InMemoryRaftCluster(["a", "b"]);
      c.elect("a");
      c.isolate("b");
      c.node("a").propose(text("x"));
      c.settle();
      expect(c.node("a").status().commit).toBe(1);
      c.tickAll(20, ["a"]);
      expect(c.node("a").status().role).toBe("follower");
      c.heal();
      c.tickUntil(() => c.leader() !== null, 100);
      c.tickAll(2);
      expect(c.node("a").status().commit).toBeGreaterThanOrEqual(2);
    });

    it("four voters need three", () => {
      const ids = ["a", "b", "c", "d"];
      const c = new InMemoryRaftCluster(ids);
      c.elect("a");
      c.isolate("c");
      c.isolate("d");
      c.node("a").propose(text("x"));
      c.settle();
      expect(c.node("a").status().commit).toBe(1);
      c.heal();
      c.isolate("d");
      c.tickAll(1, ["a", "b", "c"]);
      expect(c.node("a").status().commit).toBe(2);
    });
  });

  it("commit and applied never go backwards and each entry is applied once, in order", () => {
    const checker = new InvariantChecker();
    const c = new InMemoryRaftCluster(["a", "b", "c", "d", "e"], {}, 4, { onReady: checker.hook });
    c.tickUntil(() => c.leader() !== null, 200);
    for (let round = 0; round < 6; round++) {
      const l = c.ids.find((id) => c.node(id).status().role === "leader")!;
      for (let i = 0; i < 5; i++) c.node(l).propose(text(`r${round}-${i}`));
      c.settle();
      const victim = c.ids[(round * 2) % 5]!;
      c.isolate(victim);
      c.tickAll(25);
      c.heal();
      if (round % 2 === 0) c.restart(victim, 100 + round);
      c.tickAll(5);
    }
    expect(checker.count).toBeGreaterThan(100);
    const l = c.ids.find((id) => c.node(id).status().role === "leader")!;
    const commit = c.node(l).status().commit;
    for (const id of c.ids) {
      expect(c.node(id).status().commit).toBe(commit);
      expect(c.node(id).status().applied).toBe(commit);
    }
    expect(checker.applied.size).toBe(commit);
  });

  it("hands out at most maxCommittedSizePerReady bytes of committed entries per Ready (at least one)", () => {
    const t = new Solo({ maxCommittedSizePerReady: 60 }); // entries are 26 bytes each
    t.node.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1, 1, 1, 1]), 5));
    const r = drain(t.node, t.storage);
    const batches = r.readys.map((rd) => rd.committedEntries.map((e) => e.index)).filter((b) => b.length > 0);
    expect(batches).toEqual([[1, 2], [3, 4], [5]]);
    const u = new Solo({ maxCommittedSizePerReady: 1 });
    u.node.step(append("b", "a", 1, 0, 0, entriesWithTerms([1, 1, 1]), 3));
    const one = drain(u.node, u.storage)
      .readys.map((rd) => rd.committedEntries.length)
      .filter((n) => n > 0);
    expect(one).toEqual([1, 1, 1]);
  });

  describe("restart from storage", () => {
    function persisted(): MemoryStorage {
      const c = new InMemoryRaftCluster(VOTERS);
      c.elect("a");
      for (let i = 0; i < 5; i++) c.node("a").propose(text(`v${i}`));
      c.settle();
      c.tickAll(1);
      return c.member("b").storage;
    }

    it("restores term, vote and commit", () => {
      const storage = persisted();
      const n = new RaftNode({ id: "b", storage, random: new SeededRandom(1) });
      expect(n.status()).toMatchObject({
        term: 1,
        vote: "a",
        commit: 6,
        lastIndex: 6,
        role: "follower",
        leader: null,
      });
    });

    it("re-applies nothing at or before `applied`", () => {
      const storage = persisted();
      const n = new RaftNode({ id: "b", storage, random: new SeededRandom(1), applied: 4 });
      expect(n.status().applied).toBe(4);
      const h = drain(n, storage);
      expect(h.committed.map((e) => e.index)).toEqual([5, 6]);
      expect(h.hardStates).toEqual([]);
      expect(n.status().applied).toBe(6);
    });

    it("re-applies everything after `applied` (0: the whole committed log)", () => {
      const storage = persisted();
      const n = new RaftNode({ id: "b", storage, random: new SeededRandom(1) });
      expect(drain(n, storage).committed.map((e) => e.index)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    it("refuses an inconsistent disk: commit beyond the log, or applied beyond commit", () => {
      const bad = storageWithLog(VOTERS, [1, 1], { term: 1, commit: 3 });
      expect(() => new RaftNode({ id: "a", storage: bad, random: new SeededRandom(1) })).toThrow(
        RaftInvariantError,
      );
      const ok = storageWithLog(VOTERS, [1, 1, 1], { term: 1, commit: 2 });
      expect(() => new RaftNode({ id: "a", storage: ok, random: new SeededRandom(1), applied: 3 })).toThrow(
        RaftInvariantError,
      );
    });

    it("refuses a commit below the snapshot", () => {
      const s = storageWithLog(VOTERS, [1, 1, 1], { term: 1, commit: 3 });
      s.createSnapshot(3, { voters: VOTERS }, new Uint8Array());
      s.compact(3);
      s.setHardState({ term: 1, vote: null, commit: 1 });
      expect(() => new RaftNode({ id: "a", storage: s, random: new SeededRandom(1) })).toThrow(
        RaftInvariantError,
      );
    });
  });
});
