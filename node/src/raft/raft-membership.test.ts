import { describe, expect, it } from "vitest";
import { type ConfChange, encodeConfChange } from "./conf-change.js";
import { ProposalRefusedError, RaftInvariantError } from "./errors.js";
import { MemoryStorage } from "./memory-storage.js";
import { RaftNode } from "./raft-node.js";
import { SeededRandom } from "./seeded-random.js";
import { append, entry, ofType, vote } from "./test-fixtures/helpers.js";
import { InMemoryRaftCluster, text } from "./test-fixtures/in-memory-raft-cluster.js";

const VOTERS = ["a", "b", "c"];

/** A cluster of a, b, c led by a, with d started empty (not bootstrapped) and added as a learner. */
function withLearner(): InMemoryRaftCluster {
  const c = InMemoryRaftCluster.bootstrapped(VOTERS);
  c.elect("a");
  c.join("d");
  change(c, "a", { type: "add-learner", node: "d" });
  return c;
}

function change(c: InMemoryRaftCluster, leader: string, conf: ConfChange): void {
  c.node(leader).proposeConfChange(conf);
  c.settle();
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ProposalRefusedError) return error.reason;
    throw error;
  }
  throw new Error("the proposal was not refused");
}

describe("membership changes", () => {
  it("replicates to a learner, which catches up but neither counts toward a commit nor campaigns", () => {
    const c = withLearner();
    c.node("a").propose(text("x1"));
    c.settle();
    expect(c.appliedData("d")).toEqual(["x1"]);
    expect(c.node("d").status().conf).toEqual({ voters: VOTERS, learners: ["d"] });
    expect(c.node("a").status().progress.d).toMatchObject({ match: c.node("a").status().lastIndex });
    // Not even a TimeoutNow makes a learner campaign.
    c.node("d").step({ type: "timeout-now", from: "a", to: "d", term: c.node("a").status().term });
    c.settle();
    expect(c.leader()).toBe("a");

    // With b and c cut off, the learner's acknowledgement does not make a quorum.
    c.isolate("b");
    c.isolate("c");
    const commit = c.node("a").status().commit;
    c.node("a").propose(text("x2"));
    c.settle();
    expect(c.node("d").status().lastIndex).toBe(c.node("a").status().lastIndex);
    expect(c.node("a").status().commit).toBe(commit);

    // With the leader gone too, the learner waits: no election, however long.
    c.isolate("a");
    const { term } = c.node("d").status();
    c.tickAll(100, ["d"]);
    expect(c.node("d").status()).toMatchObject({ role: "follower", term });
    expect(c.sent.filter((m) => m.from === "d" && (m.type === "vote" || m.type === "pre-vote"))).toEqual([]);
  });

  it("promotes a learner to a voter: it then counts toward commits and may lead", () => {
    const c = withLearner();
    change(c, "a", { type: "promote", node: "d" });
    for (const id of c.ids)
      expect(c.node(id).status().conf).toEqual({ voters: [...VOTERS, "d"], learners: [] });
    // Four voters: a quorum is three, so a with b and d commits while c is away.
    c.isolate("c");
    c.node("a").propose(text("y"));
    c.settle();
    expect(c.appliedData("d")).toEqual(["y"]);
    c.heal();
    c.node("a").transferLeadership("d");
    c.settle();
    expect(c.leader()).toBe("d");
  });

  it("never lets a node without a configuration vote: a stale voter cannot win with it", () => {
    // c misses acknowledged writes; then b loses its data and starts empty, not told to bootstrap.
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    c.isolate("c");
    for (let i = 0; i < 5; i++) c.node("a").propose(text(`w${i}`));
    c.settle();
    expect(c.appliedData("b")).toHaveLength(5);
    c.join("b");
    c.heal();
    c.isolate("a");
    // c campaigns for a long time; b ignores its requests, so no leader and nothing lost.
    c.tickAll(200, ["b", "c"]);
    expect([c.node("b").status().role, c.node("c").status().role]).not.toContain("leader");
    expect(c.node("b").status().vote).toBeNull();
    // a returns and leads again with every acknowledged write.
    c.heal();
    c.tickUntil(() => c.leader() === "a", 500);
    c.node("a").propose(text("after"));
    c.tickAll(3);
    expect(c.appliedData("c")).toEqual(["w0", "w1", "w2", "w3", "w4", "after"]);
  });

  it("proposes one change at a time, and none before the leader's own term has an applied entry", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.node("a").campaign();
    // Elected, with its no-op not yet committed: no change yet.
    for (let i = 0; i < 10 && c.node("a").status().role !== "leader"; i++) c.deliverRound();
    expect(c.node("a").status().role).toBe("leader");
    expect(refusal(() => c.node("a").proposeConfChange({ type: "add-learner", node: "d" }))).toBe(
      "ConfChangePending",
    );
    c.settle();
    c.join("d");
    c.isolate("b");
    c.isolate("c");
    c.node("a").proposeConfChange({ type: "add-learner", node: "d" });
    c.settle();
    // Not committed, so not applied: the next change waits.
    expect(refusal(() => c.node("a").proposeConfChange({ type: "promote", node: "d" }))).toBe(
      "ConfChangePending",
    );
    c.heal();
    c.tickAll(2, ["a"]);
    expect(c.node("a").status().conf.learners).toEqual(["d"]);
    change(c, "a", { type: "promote", node: "d" });
    expect(c.node("a").status().conf.voters).toContain("d");
  });

  it("refuses a change that does not apply, and a change from a follower", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    const a = c.node("a");
    expect(refusal(() => a.proposeConfChange({ type: "add-learner", node: "b" }))).toBe("InvalidConfChange");
    expect(refusal(() => a.proposeConfChange({ type: "promote", node: "b" }))).toBe("InvalidConfChange");
    expect(refusal(() => a.proposeConfChange({ type: "remove", node: "z" }))).toBe("InvalidConfChange");
    expect(refusal(() => c.node("b").proposeConfChange({ type: "remove", node: "c" }))).toBe("NotLeader");
    const solo = new InMemoryRaftCluster(["a"]);
    solo.elect("a");
    expect(refusal(() => solo.node("a").proposeConfChange({ type: "remove", node: "a" }))).toBe(
      "InvalidConfChange",
    );
  });

  it("removes a voter: the rest commit on their own and the removed node stays quiet", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    change(c, "a", { type: "remove", node: "c" });
    expect(c.node("a").status().conf).toEqual({ voters: ["a", "b"], learners: [] });
    expect(Object.keys(c.node("a").status().progress).sort()).toEqual(["a", "b"]);
    c.isolate("c");
    c.node("a").propose(text("z"));
    c.settle();
    expect(c.appliedData("b")).toEqual(["z"]);
    c.heal();
    const { term } = c.node("a").status();
    c.tickAll(100, ["c"]);
    expect(c.node("a").status()).toMatchObject({ role: "leader", term });
  });

  it("a leader that removes itself hands leadership to the most caught-up voter at once", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    c.isolate("c");
    c.node("a").propose(text("only-b-has-it"));
    c.settle();
    c.heal();
    c.filter = (m) => !(m.to === "c" && m.type === "append");
    change(c, "a", { type: "remove", node: "a" });
    c.filter = () => true;
    c.settle();
    // No tick passed: b took over through TimeoutNow, not an election timeout.
    expect(c.leader()).toBe("b");
    expect(c.node("a").status().role).toBe("follower");
    c.node("b").propose(text("next"));
    c.tickAll(3);
    expect(c.appliedData("c")).toEqual(["only-b-has-it", "next"]);
  });

  it("a successor told to take over before it applied the leader's removal campaigns once it has", () => {
    const storage = new MemoryStorage({ voters: VOTERS });
    const removal = {
      ...entry(2, 1),
      type: "conf" as const,
      data: encodeConfChange({ type: "remove", node: "a" }),
    };
    storage.append([entry(1, 1, "x"), removal]);
    storage.setHardState({ term: 1, vote: "a", commit: 1 });
    const b = new RaftNode({ id: "b", storage, random: new SeededRandom(5), applied: 1 });
    // The leader's commit reaches b on an append that checks its log (a heartbeat commits only that far).
    b.step(append("a", "b", 1, 2, 1, [], 2));
    const applying = b.ready();
    expect(applying.committedEntries.at(-1)).toMatchObject({ index: 2, type: "conf" });
    b.step({ type: "timeout-now", from: "a", to: "b", term: 1 });
    expect(b.status().role).toBe("follower");
    b.advance();
    // At once, no election timeout waited: a vote (not a pre-vote) that may cut short the peers' leases.
    expect(b.status()).toMatchObject({ role: "candidate", term: 2 });
    expect(ofType(b.ready().messages, "vote")).toMatchObject([{ to: "c", transfer: true }]);
  });

  it("a learner that has not learnt of its promotion still grants the vote a committed one needs", () => {
    const c = InMemoryRaftCluster.bootstrapped(["a"]);
    c.elect("a");
    c.join("l");
    change(c, "a", { type: "add-learner", node: "l" });
    // a commits the promotion alone (its configuration then is {a}); l never hears of it.
    c.filter = (m) => !(m.from === "a" && m.to === "l");
    change(c, "a", { type: "promote", node: "l" });
    expect(c.node("a").status().conf).toEqual({ voters: ["a", "l"], learners: [] });
    expect(c.node("l").status().conf.learners).toEqual(["l"]);
    // a hears from no quorum of {a, l} and steps down; once the link heals, l's vote elects it again.
    c.tickUntil(() => c.node("a").status().role !== "leader", 100, ["a"]);
    c.filter = () => true;
    c.tickUntil(() => c.leader() === "a", 300);
  });

  it("a voter that holds a promotion it has not applied grants the promoted node the vote it needs", () => {
    const c = InMemoryRaftCluster.bootstrapped(["a", "b", "c"]);
    c.elect("a");
    change(c, "a", { type: "remove", node: "c" });
    c.isolate("c");
    c.join("l");
    change(c, "a", { type: "add-learner", node: "l" });
    // a commits the promotion with b's acknowledgement, and l applies it; b never learns it committed.
    let committed = false;
    c.filter = (m) => !(m.from === "a" && m.to === "b" && committed);
    const { index } = c.node("a").proposeConfChange({ type: "promote", node: "l" });
    for (let i = 0; i < 20; i++) {
      c.deliverRound();
      if (c.node("a").status().commit >= index) committed = true;
    }
    c.settle();
    expect(c.node("l").status().conf.voters).toEqual(["a", "b", "l"]);
    expect(c.node("b").status()).toMatchObject({ conf: { voters: ["a", "b"], learners: ["l"] } });
    expect(c.node("b").status().commit).toBeLessThan(index);
    // a is gone: b and l are a quorum of {a, b, l}, the committed configuration, and elect l.
    c.filter = () => true;
    c.isolate("a");
    c.tickUntil(() => c.node("l").status().role === "leader", 300, ["b", "l"]);
  });

  it("a lagging voter grants its vote to a voter of a configuration it has not yet heard of", () => {
    const c = InMemoryRaftCluster.bootstrapped(["a", "b", "c"]);
    c.join("d");
    c.elect("b");
    // c lags through three changes, each committed without it.
    c.isolate("c");
    for (const ch of [
      { type: "add-learner", node: "d" },
      { type: "promote", node: "d" },
      { type: "remove", node: "a" },
    ] as const) {
      c.node("b").proposeConfChange(ch);
      c.settle();
      c.tickAll(3, ["a", "b", "d"]);
    }
    expect(c.node("d").status().conf.voters.slice().sort()).toEqual(["b", "c", "d"]);
    expect(c.node("c").status().conf.voters.slice().sort()).toEqual(["a", "b", "c"]);
    // b fails as c returns: {c, d} is a quorum of {b, c, d}, though c has never heard of d.
    c.heal();
    c.isolate("b");
    c.tickUntil(() => c.node("d").status().role === "leader", 400, ["a", "c", "d"]);
    c.node("d").propose(text("after"));
    c.tickAll(3, ["a", "c", "d"]);
    expect(c.node("c").status().conf.voters.slice().sort()).toEqual(["b", "c", "d"]);
    expect(c.appliedData("c")).toContain("after");
  });

  it("ignores a candidate outside its configuration that campaigns under an older one", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    change(c, "a", { type: "remove", node: "c" });
    const applied = c.node("b").status().applied;
    const { term } = c.node("b").status();
    // c, removed, campaigns under the bootstrap configuration (or any older than b applied): ignored,
    // even as a transfer's candidate, which the check-quorum lease lets through.
    for (const confIndex of [0, applied]) {
      c.node("b").step(vote("c", "b", term + 5, 100, term + 4, { confIndex, transfer: true }));
      expect(c.node("b").status().term).toBe(term);
    }
    // Under one past what b applied, it is answered (and granted here: its log looks longer).
    c.node("b").step(vote("c", "b", term + 5, 100, term + 4, { confIndex: applied + 1, transfer: true }));
    expect(c.node("b").status()).toMatchObject({ term: term + 5, vote: "c" });
  });

  it("a leader that removed itself still grants its successor the vote it needs", () => {
    const c = InMemoryRaftCluster.bootstrapped(["a", "b"]);
    c.elect("a");
    let removal = Number.POSITIVE_INFINITY;
    // b never learns that the removal committed, so it still counts a as a voter.
    c.filter = (m) =>
      !(m.from === "a" && (m.type === "append" || m.type === "heartbeat") && m.commit >= removal);
    removal = c.node("a").proposeConfChange({ type: "remove", node: "a" }).index;
    c.settle();
    // a's TimeoutNow makes b campaign while b still counts a as a voter: a's vote elects it.
    c.tickUntil(() => c.leader() === "b", 300, ["b"]);
    expect(c.node("a").status()).toMatchObject({ role: "follower", conf: { voters: ["b"] } });
    expect(c.node("b").status().conf.voters).toEqual(["b"]);
  });

  it("a node that holds its own removal committed never campaigns, before it applies it or after", () => {
    const storage = new MemoryStorage({ voters: VOTERS });
    const removal = {
      ...entry(2, 1),
      type: "conf" as const,
      data: encodeConfChange({ type: "remove", node: "c" }),
    };
    storage.append([entry(1, 1, "x"), removal]);
    storage.setHardState({ term: 1, vote: "a", commit: 1 });
    const node = new RaftNode({ id: "c", storage, random: new SeededRandom(7) });
    // The leader's commit reaches c: the Ready that hands out the removal is taken, not yet advanced.
    node.step(append("a", "c", 1, 2, 1, [], 2));
    const rd = node.ready();
    expect(rd.committedEntries.at(-1)).toMatchObject({ index: 2, type: "conf" });
    // Meanwhile the leader goes quiet: c, a voter of what it has applied, waits to apply what it holds.
    for (let i = 0; i < 100; i++) node.tick();
    node.campaign();
    expect(node.status().role).toBe("follower");
    node.advance();
    expect(node.status().conf.voters).toEqual(["a", "b"]);
    while (node.hasReady()) {
      const next = node.ready();
      expect(ofType(next.messages, "pre-vote")).toEqual([]);
      expect(ofType(next.messages, "vote")).toEqual([]);
      node.advance();
    }
    for (let i = 0; i < 100; i++) node.tick();
    expect(node.status()).toMatchObject({ role: "follower", term: 1 });
  });

  it("answers the configuration at an index only once advance() has passed it", () => {
    const seen: { index: number; before: unknown }[] = [];
    const c = new InMemoryRaftCluster(VOTERS, {}, 1, {
      onReady: (id, rd, m) => {
        const conf = rd.committedEntries.find((e) => e.type === "conf");
        if (id !== "a" || !conf) return;
        // A driver applies a Ready's entries before advance(): the change is not recorded yet.
        let before: unknown = null;
        try {
          m.raft.confStateAt(conf.index);
        } catch (error) {
          before = error;
        }
        seen.push({ index: conf.index, before });
      },
    });
    c.elect("a");
    c.join("d");
    change(c, "a", { type: "add-learner", node: "d" });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.before).toBeInstanceOf(RaftInvariantError);
    expect(c.node("a").confStateAt(seen[0]!.index)).toEqual({ voters: VOTERS, learners: ["d"] });
    expect(c.node("a").confStateAt(seen[0]!.index - 1)).toEqual({ voters: VOTERS });
    expect(c.node("a").confState()).toEqual(c.node("a").status().conf);
  });

  it("rebuilds the configuration on restart from the snapshot and the applied conf entries", () => {
    const c = withLearner();
    change(c, "a", { type: "promote", node: "d" });
    c.node("a").propose(text("p"));
    c.settle();
    const storage = c.member("b").storage;
    const applied = c.node("b").status().applied;
    const restarted = new RaftNode({ id: "b", storage, random: new SeededRandom(3), applied });
    expect(restarted.status().conf).toEqual({ voters: [...VOTERS, "d"], learners: [] });
    expect(restarted.confStateAt(1)).toEqual({ voters: VOTERS, learners: [] });
  });

  it("campaigns only once no committed configuration change is left to apply", () => {
    const c = withLearner();
    const { index: promoted } = c.node("a").proposeConfChange({ type: "promote", node: "d" });
    c.settle();
    const { index: removed } = c.node("a").proposeConfChange({ type: "remove", node: "c" });
    c.settle();
    // b restarts having applied up to just before the promotion: it holds both changes committed. By
    // {a,b,c} it would need c's vote; by {a,b,d}, the committed configuration, d's.
    const storage = c.member("b").storage;
    expect(storage.initialState().hardState.commit).toBeGreaterThanOrEqual(removed);
    const b = new RaftNode({ id: "b", storage, random: new SeededRandom(3), applied: promoted - 1 });
    // The first Ready hands out the committed entries to apply; it is advanced only when a test says.
    let applying: ReturnType<RaftNode["ready"]> | null = b.ready();
    expect(applying.committedEntries.at(-1)?.index).toBeGreaterThanOrEqual(removed);
    const asked = (): string[] => {
      const to: string[] = [];
      while (applying === null && b.hasReady()) {
        const rd = b.ready();
        to.push(...rd.messages.filter((m) => m.type === "pre-vote" || m.type === "vote").map((m) => m.to));
        b.advance();
      }
      return to;
    };
    for (let i = 0; i < 100; i++) b.tick();
    b.campaign();
    expect(applying.messages.filter((m) => m.type === "pre-vote" || m.type === "vote")).toEqual([]);
    b.advance();
    applying = null;
    expect(b.status().conf.voters).toEqual(["a", "b", "d"]);
    for (let i = 0; i < 100; i++) b.tick();
    // Had it campaigned while applying, by {a,b,c}, c would have been asked too.
    expect(new Set(asked())).toEqual(new Set(["a", "d"]));
  });

  it("never wins by a configuration it holds superseded: a committed change to apply holds it back", () => {
    /** A driver working through a committed backlog: it takes at most `budget` more Readies for now. */
    class PagingNode extends RaftNode {
      budget = Number.POSITIVE_INFINITY;
      override hasReady(): boolean {
        return this.budget > 0 && super.hasReady();
      }
      override ready(): ReturnType<RaftNode["ready"]> {
        this.budget--;
        return super.ready();
      }
    }
    // Pages of one entry stand in for a backlog larger than a Ready's page of committed entries.
    const c = InMemoryRaftCluster.bootstrapped(VOTERS, { maxCommittedSizePerReady: 1 });
    c.hooks.createNode = (options) => (options.id === "c" ? new PagingNode(options) : new RaftNode(options));
    c.restart("c");
    c.settle();
    const paging = () => c.node("c") as PagingNode;
    c.elect("a");
    c.join("d");
    change(c, "a", { type: "add-learner", node: "d" });
    c.isolate("c");
    for (let i = 0; i < 40; i++) c.node("a").propose(text(`backlog${i}`));
    c.settle();
    // {a,b,c} to {a,b,c,d}, committed by a and b; then {a,c,d}, committed by a and d.
    const promoted = c.node("a").proposeConfChange({ type: "promote", node: "d" }).index;
    c.settle();
    c.isolate("b");
    const removed = c.node("a").proposeConfChange({ type: "remove", node: "b" }).index;
    c.node("a").propose(text("E"));
    c.settle();
    // c takes three Readies: it holds all of it, acknowledges it, but knows only the promotion committed.
    paging().budget = 3;
    for (const link of ["a->c", "c->a", "d->c", "c->d"]) c.cut.delete(link);
    c.filter = (m) =>
      !(
        m.from === "a" &&
        m.to === "c" &&
        (m.type === "append" || m.type === "heartbeat") &&
        m.commit >= removed
      );
    c.tickAll(2, ["a"]);
    expect(c.node("c").status().commit).toBe(promoted);
    expect(c.node("a").status().conf.voters).toEqual(["a", "c", "d"]);
    // {a,d} commits F under {a,c,d}; {b,c} is a majority of {a,b,c}, the configuration c applied last.
    c.heal();
    c.filter = () => true;
    for (const x of ["a", "d"])
      for (const y of ["b", "c"]) {
        c.cut.add(`${x}->${y}`);
        c.cut.add(`${y}->${x}`);
      }
    const f = c.node("a").propose(text("F")).index;
    c.settle();
    expect(c.node("a").status().commit).toBe(f);
    for (let round = 0; round < 200 && c.node("c").status().role !== "leader"; round++) {
      paging().budget = 1;
      c.tickAll(1, ["b", "c"]);
    }
    expect(c.node("c").status().role).not.toBe("leader");
    paging().budget = Number.POSITIVE_INFINITY;
    c.heal();
    c.tickAll(5);
    const at = (id: string) =>
      c
        .member(id)
        .applied.filter((e) => e.index === f)
        .map((e) => `${e.term}/${e.type}`);
    expect(at("c")).toEqual(at("a"));
  });

  it("brings a learner that joins after compaction up by snapshot, configuration included", () => {
    const c = InMemoryRaftCluster.bootstrapped(VOTERS);
    c.elect("a");
    for (let i = 0; i < 4; i++) c.node("a").propose(text(`s${i}`));
    c.settle();
    c.join("d");
    change(c, "a", { type: "add-learner", node: "d" });
    // The leader compacts behind a snapshot that already lists d, and d has nothing yet.
    c.isolate("d");
    c.node("a").propose(text("s4"));
    c.settle();
    const a = c.member("a");
    const { applied } = a.raft.status();
    a.storage.createSnapshot(applied, a.raft.confStateAt(applied), text("image"));
    a.storage.compact(applied);
    c.heal();
    c.tickAll(3, ["a"]);
    expect(c.node("d").status()).toMatchObject({ applied, conf: { voters: VOTERS, learners: ["d"] } });
  });
});
