import { describe, expect, it } from "vitest";
import { applyConfChange, type ConfChange, encodeConfChange } from "../raft/conf-change.js";
import { bootstrapState, type ConfState, type Entry, type NodeId, SeededRandom } from "../raft/index.js";
import type { MembershipProfile } from "./fault-profile.js";
import {
  type LeaderView,
  MAX_VOTERS,
  type MembershipAction,
  MembershipOperator,
} from "./membership-operator.js";

const PROFILE: MembershipProfile = {
  gap: [1, 1],
  changeRate: 1,
  removeLeader: 1,
  removeLearner: 1,
  catchUpSlack: 2,
};

/**
 * An operator over a cluster bootstrapped with `voters`, whose log it follows entry by entry. Every
 * node applies each change at once, but those `down` and those `lagging` behind on an earlier one.
 */
class Cluster {
  readonly down = new Set<NodeId>();
  readonly lagging = new Map<NodeId, ConfState>();
  readonly operator: MembershipOperator;
  conf: ConfState = { voters: [] };
  private index = 0;

  constructor(voters: readonly NodeId[], profile = PROFILE, seed = 1) {
    this.operator = new MembershipOperator(profile, new SeededRandom(seed), (id) =>
      this.down.has(id) ? null : (this.lagging.get(id) ?? this.conf),
    );
    this.commit(bootstrapState(voters).entries[0]!);
  }

  /** Commits a membership change as the next entry. */
  change(change: ConfChange): void {
    this.commit({ index: this.index + 1, term: 1, type: "conf", data: encodeConfChange(change) });
  }

  /** Commits an entry that is not a membership change (the fate of a change a leader lost). */
  noop(): void {
    this.commit({ index: this.index + 1, term: 1, type: "noop", data: new Uint8Array() });
  }

  get next(): number {
    return this.index + 1;
  }

  leader(matches: Record<NodeId, number> = {}, id = this.conf.voters[0]!): LeaderView {
    const progress: Record<NodeId, { match: number }> = {};
    for (const member of [...this.conf.voters, ...(this.conf.learners ?? [])])
      progress[member] = { match: matches[member] ?? this.index };
    return { id, conf: this.conf, commit: this.index, progress };
  }

  private commit(entry: Entry): void {
    this.index = entry.index;
    this.operator.observeCommitted(entry);
    this.conf = this.operator.conf;
  }
}

function proposal(action: MembershipAction | null): ConfChange | null {
  return action?.kind === "propose" ? action.change : null;
}

/** The nodes the operator proposes to remove over many looks at the same cluster. */
function removals(c: Cluster): NodeId[] {
  const removed = new Set<NodeId>();
  for (let i = 0; i < 200; i++) {
    const change = proposal(c.operator.next(c.leader(), false));
    if (change?.type === "remove") removed.add(change.node);
  }
  return [...removed].sort();
}

describe("MembershipOperator", () => {
  it("replaces a lost member: removes it, has a fresh node join as a learner, promotes it once caught up", () => {
    const c = new Cluster(["a", "b", "c"]);
    expect(c.operator.mayWipe("c")).toBe(true);
    c.operator.wiped("c");
    expect(c.operator.settled(c.conf)).toBe(false);

    expect(proposal(c.operator.next(c.leader(), true))).toEqual({ type: "remove", node: "c" });
    c.change({ type: "remove", node: "c" });
    expect(c.operator.next(c.leader(), true)).toEqual({ kind: "join" });
    c.operator.started("d");
    // Refused or lost, the add is asked for again until it commits.
    expect(proposal(c.operator.next(c.leader(), true))).toEqual({ type: "add-learner", node: "d" });
    expect(proposal(c.operator.next(c.leader(), true))).toEqual({ type: "add-learner", node: "d" });
    c.change({ type: "add-learner", node: "d" });

    expect(c.operator.next(c.leader({ d: c.next - 1 - PROFILE.catchUpSlack - 1 }), true)).toBeNull();
    expect(c.operator.settled(c.conf)).toBe(false);
    expect(proposal(c.operator.next(c.leader({ d: c.next - 1 - PROFILE.catchUpSlack }), true))).toEqual({
      type: "promote",
      node: "d",
    });
    c.change({ type: "promote", node: "d" });
    expect(c.conf).toEqual({ voters: ["a", "b", "d"], learners: [] });
    expect(c.operator.settled(c.conf)).toBe(true);
    expect(c.operator.next(c.leader(), true)).toBeNull();
  });

  it("promotes only where the voters common to both configurations that are up make a quorum of each", () => {
    const single = new Cluster(["a"]);
    single.change({ type: "add-learner", node: "l" });
    // Beside a single voter the learner's vote would be needed before it knows it has one.
    expect(single.operator.next(single.leader(), true)).toBeNull();

    const pair = new Cluster(["a", "b"]);
    pair.change({ type: "add-learner", node: "l" });
    expect(proposal(pair.operator.next(pair.leader(), true))).toEqual({ type: "promote", node: "l" });
    pair.down.add("b");
    expect(pair.operator.next(pair.leader(), true)).toBeNull();
    // A learner that is down is not promoted either.
    pair.down.delete("b");
    pair.down.add("l");
    expect(pair.operator.next(pair.leader(), true)).toBeNull();
  });

  it("removes a voter only where the voters left that are up make a quorum of both configurations", () => {
    const noChoice = { ...PROFILE, removeLeader: 0, removeLearner: 0 };
    const c = new Cluster(["a", "b", "c", "d", "e"], noChoice);
    c.down.add("d");
    c.down.add("e");
    // Removing b or c would leave a, and one of b and c, of the five: no quorum of the old voters.
    expect(removals(c)).toEqual(["d", "e"]);

    // A promoted learner that has not applied its promotion is not counted on: it may not know it is a voter.
    const lag = new Cluster(["a", "b", "c"], noChoice);
    lag.change({ type: "add-learner", node: "l" });
    const beforePromotion = lag.conf;
    lag.change({ type: "promote", node: "l" });
    lag.lagging.set("l", beforePromotion);
    expect(removals(lag)).toEqual(["l"]);
    lag.lagging.clear();
    expect(removals(lag)).toEqual(["b", "c", "l"]);

    expect(removals(new Cluster(["a", "b"]))).toEqual([]);
  });

  it("lets a disk be lost only where every change in play keeps a quorum of the nodes not lost", () => {
    const c = new Cluster(["a", "b", "c"]);
    expect(c.operator.mayWipe("z")).toBe(false);
    c.operator.accepted({ type: "remove", node: "c" }, c.next);
    // Were c removed, a and b would be all the voters: neither may be lost meanwhile.
    expect(c.operator.mayWipe("a")).toBe(false);
    expect(c.operator.mayWipe("c")).toBe(true);
    // The leader lost that change: another entry was committed at its index.
    c.noop();
    expect(c.operator.mayWipe("a")).toBe(true);
    c.operator.wiped("a");
    expect(c.operator.mayWipe("a")).toBe(false);
    expect(c.operator.mayWipe("b")).toBe(false);

    // A learner that has not applied its promotion may not know it votes: a, b and c are all needed.
    const d = new Cluster(["a", "b", "c"]);
    d.change({ type: "add-learner", node: "l" });
    expect(d.operator.mayWipe("l")).toBe(true);
    const beforePromotion = d.conf;
    d.change({ type: "promote", node: "l" });
    expect(d.operator.mayWipe("a")).toBe(true);
    d.lagging.set("l", beforePromotion);
    expect(d.operator.mayWipe("l")).toBe(true);
    expect(d.operator.mayWipe("a")).toBe(false);
    // Nor is a node that is down sure to vote: it may come back having lost what it applied.
    d.lagging.clear();
    d.down.add("b");
    expect(d.operator.mayWipe("a")).toBe(false);
  });

  it("left to itself, keeps two to five voters and makes every kind of change", () => {
    const c = new Cluster(["n1", "n2", "n3"], PROFILE, 7);
    let fresh = 3;
    const made = new Set<string>();
    const voterCounts = new Set<number>();
    for (let i = 0; i < 3000; i++) {
      const leader = c.leader();
      const action = c.operator.next(leader, false);
      if (action === null) continue;
      let change: ConfChange;
      if (action.kind === "join") {
        const id = `n${++fresh}`;
        c.operator.started(id);
        change = { type: "add-learner", node: id };
      } else {
        change = action.change;
      }
      made.add(change.type === "remove" && change.node === leader.id ? "remove-leader" : change.type);
      expect(applyConfChange(c.conf, change)).not.toBe(c.conf);
      c.change(change);
      voterCounts.add(c.conf.voters.length);
      expect(c.conf.voters.length + (c.conf.learners ?? []).length).toBeLessThanOrEqual(MAX_VOTERS + 1);
    }
    expect([...voterCounts].sort()).toEqual([2, 3, 4, 5]);
    expect([...made].sort()).toEqual(["add-learner", "promote", "remove", "remove-leader"]);
  });
});
