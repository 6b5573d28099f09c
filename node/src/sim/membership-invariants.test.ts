import { describe, expect, it } from "vitest";
import { type ConfEntry, encodeConfChange } from "../raft/conf-change.js";
import {
  type ConfState,
  type Entry,
  MemoryStorage,
  type NodeId,
  type RaftStatus,
  type Role,
  type VoteMessage,
} from "../raft/index.js";
import { changesAfter, MembershipChecker } from "./membership-invariants.js";
import { violation } from "./test-fixtures/violation.js";

const CONF: ConfState = { voters: ["a", "b", "c"], learners: ["d"] };

function status(role: Role, term: number, conf: ConfState = CONF, vote: NodeId | null = null): RaftStatus {
  return {
    id: "x",
    term,
    vote,
    commit: 0,
    applied: 0,
    role,
    leader: role === "leader" ? "x" : null,
    lastIndex: 0,
    transferee: null,
    leaderCommit: 0,
    conf,
    progress: {},
  };
}

function vote(from: NodeId, to: NodeId, term: number): VoteMessage {
  return { type: "vote", from, to, term, index: 0, logTerm: 0, transfer: false, confIndex: 0 };
}

function grant(checker: MembershipChecker, from: NodeId, to: NodeId, term: number): void {
  checker.observeGrant({ type: "vote-response", from, to, term, reject: false });
}

/** A committed membership change at `index`. */
function change(index: number, data: ConfEntry): Entry {
  return { index, term: 1, type: "conf", data: encodeConfChange(data) };
}

function entry(index: number, type: Entry["type"], term = 1): Entry {
  return { index, term, type, data: new Uint8Array([index]) };
}

describe("MembershipChecker", () => {
  it("a leader must have won on the votes of a quorum of its voters, a learner's not counted", () => {
    const won = (grants: [from: NodeId, term: number, granted: boolean][], conf = CONF) => {
      const c = new MembershipChecker();
      for (const [from, term, granted] of grants)
        c.observeGrant({ type: "vote-response", from, to: "a", term, reject: !granted });
      return violation(() => c.observeStatus("a", status("candidate", 3, conf), status("leader", 3, conf)));
    };
    expect(won([["b", 3, true]])).toBeUndefined();
    expect(won([["d", 3, true]])).toBe("voters-only");
    expect(
      won([
        ["b", 3, true],
        ["d", 3, true],
      ]),
    ).toBeUndefined();
    // A refused vote, or a vote of another term, counts for nothing.
    expect(won([["b", 3, false]])).toBe("voters-only");
    expect(
      won([
        ["b", 2, true],
        ["d", 3, true],
      ]),
    ).toBe("voters-only");
    // A grant of an earlier election that arrives late neither hides those of this one nor counts.
    expect(
      won([
        ["b", 3, true],
        ["c", 2, true],
      ]),
    ).toBeUndefined();
    expect(
      won([
        ["d", 3, true],
        ["b", 2, true],
      ]),
    ).toBe("voters-only");
    // A single voter elects itself.
    expect(won([], { voters: ["a"] })).toBeUndefined();
  });

  it("a node that is not a voter of its configuration never campaigns or leads", () => {
    const c = new MembershipChecker();
    expect(violation(() => c.observeStatus("d", status("follower", 3), status("pre-candidate", 3)))).toBe(
      "voters-only",
    );
    expect(violation(() => c.observeStatus("e", null, status("candidate", 4)))).toBe("voters-only");
    expect(violation(() => c.observeStatus("d", null, status("follower", 4)))).toBeUndefined();
    // A candidate that applies its own removal while campaigning has not campaigned as a non-voter...
    const removed = { voters: ["a", "b"] };
    expect(
      violation(() => c.observeStatus("c", status("candidate", 5), status("candidate", 5, removed))),
    ).toBeUndefined();
    // ...but must not then lead.
    grant(c, "a", "c", 5);
    grant(c, "b", "c", 5);
    expect(violation(() => c.observeStatus("c", status("candidate", 5), status("leader", 5, removed)))).toBe(
      "voters-only",
    );
  });

  it("a vote is granted only to a voter of the voter's configuration", () => {
    const c = new MembershipChecker();
    const granted = (node: NodeId, candidate: NodeId, before: RaftStatus) =>
      violation(() =>
        c.observeVoteRequest(node, vote(candidate, node, 4), before, status("follower", 4, CONF, candidate)),
      );
    expect(granted("b", "a", status("follower", 3))).toBeUndefined();
    expect(granted("b", "d", status("follower", 3))).toBe("voters-only");
    // The configuration that counts is the one the voter had when it stepped the request.
    expect(granted("b", "a", status("follower", 3, { voters: ["b", "c"], learners: ["a"] }))).toBe(
      "voters-only",
    );
    // A learner's vote for a voter is the core's policy to give or not: the leader check counts it.
    expect(granted("d", "a", status("follower", 3))).toBeUndefined();
    // Refused, or granted before (a repeated request), is not a new vote.
    const refused = () =>
      c.observeVoteRequest("b", vote("d", "b", 4), status("follower", 3), status("follower", 4, CONF, null));
    expect(violation(refused)).toBeUndefined();
    expect(granted("b", "d", status("follower", 4, CONF, "d"))).toBeUndefined();
  });

  it("a vote may go to a node a committed promotion made a voter, before the voter applied it", () => {
    const c = new MembershipChecker();
    c.observeCommittedChange(change(1, { type: "bootstrap", voters: ["a", "b", "c"] }));
    c.observeCommittedChange(change(5, { type: "add-learner", node: "d" }));
    const at = (applied: number) => ({ ...status("follower", 3), applied });
    const granted = (applied: number) =>
      violation(() =>
        c.observeVoteRequest("b", vote("d", "b", 4), at(applied), status("follower", 4, CONF, "d")),
      );
    expect(granted(5)).toBe("voters-only");
    c.observeCommittedChange(change(7, { type: "promote", node: "d" }));
    expect(granted(5)).toBeUndefined();
    expect(granted(7)).toBe("voters-only");
  });

  it("a leader's log holds at most one membership change beyond the committed index", () => {
    const c = new MembershipChecker();
    expect(violation(() => c.checkUncommittedChanges("a", 2, [7]))).toBeUndefined();
    expect(violation(() => c.checkUncommittedChanges("a", 2, [7, 9]))).toBe("one-change-at-a-time");
  });

  it("a snapshot carries the configuration the committed log has at its index", () => {
    const c = new MembershipChecker();
    c.observeCommittedChange(change(1, { type: "bootstrap", voters: ["a", "b", "c"] }));
    c.observeCommittedChange(change(5, { type: "add-learner", node: "d" }));
    const at = (index: number, conf: ConfState) =>
      violation(() => c.checkSnapshotConf("a", { index, term: 1, conf }));
    expect(at(4, { voters: ["a", "b", "c"] })).toBeUndefined();
    expect(at(4, { voters: ["c", "a", "b"], learners: [] })).toBeUndefined();
    expect(at(5, { voters: ["a", "b", "c"], learners: ["d"] })).toBeUndefined();
    // A copy recorded with the configuration from before a change it covers.
    expect(at(6, { voters: ["a", "b", "c"] })).toBe("snapshot-conf");
    expect(at(4, CONF)).toBe("snapshot-conf");
  });
});

describe("changesAfter", () => {
  it("finds the membership changes after the committed index, in the stored log and a Ready's new entries", () => {
    const stored = new MemoryStorage({ voters: [] });
    stored.append([
      entry(1, "conf"),
      entry(2, "normal"),
      entry(3, "conf"),
      entry(4, "normal"),
      entry(5, "conf"),
      entry(6, "conf"),
    ]);
    expect(changesAfter(2, stored, [])).toEqual([3, 5, 6]);
    expect(changesAfter(3, stored, [])).toEqual([5, 6]);
    // New entries replace what is stored from their first index on.
    expect(
      changesAfter(2, stored, [entry(5, "normal", 2), entry(6, "normal", 2), entry(7, "conf", 2)]),
    ).toEqual([3, 7]);
    expect(changesAfter(6, stored, [entry(7, "conf", 2)])).toEqual([7]);
  });
});
