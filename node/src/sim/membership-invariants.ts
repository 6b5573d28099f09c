import { applyConfChange, decodeConfChange } from "../raft/conf-change.js";
import type {
  ConfState,
  Entry,
  LogStorage,
  NodeId,
  RaftStatus,
  SnapshotMeta,
  VoteMessage,
  VoteResponseMessage,
} from "../raft/index.js";
import { InvariantViolation } from "./invariants.js";

/** What of a node's status a vote check needs: its term and vote, and the configuration it applied. */
type VoterState = Pick<RaftStatus, "term" | "vote" | "conf" | "applied">;

/**
 * The invariants membership adds, each checked on what one step changed:
 *
 * - voters-only: only a voter of the configuration a node has applied campaigns or leads; a leader
 *   won on the votes of a quorum of the voters of the configuration it had applied, so a learner, a
 *   removed node or one not yet added never has a vote counted; and a node grants its vote only to
 *   a voter of its own configuration, or of a committed one it has yet to apply (a promotion commits
 *   once a quorum holds it, before every voter has applied it). Whether a node that is not a voter may itself grant a vote is
 *   the core's policy, not a safety property: etcd-raft lets a learner vote for a candidate that
 *   counts it as a voter (its promotion may be committed before it has applied it), and the
 *   candidate's count is what the leader check holds to its voters;
 * - one-change-at-a-time: a leader's log never holds more than one membership change beyond the
 *   committed index. Two uncommitted changes could apply in either order on different nodes, and two
 *   configurations two changes apart need not share a majority;
 * - snapshot-conf: a snapshot, taken, copied or received, carries the configuration the committed log
 *   has at its index. A node that installs or restarts from one with another would disagree with the
 *   rest on who votes.
 */
export class MembershipChecker {
  /** Per candidate, the granted votes delivered to it in one term. */
  private readonly grants = new Map<NodeId, { term: number; from: Set<NodeId> }>();
  /** The configuration from each committed membership change on, in index order. */
  private readonly committedConfs: { index: number; conf: ConfState }[] = [
    { index: 0, conf: { voters: [] } },
  ];

  /**
   * A membership change was applied for the first time anywhere. Committed indexes are first applied
   * in order, and a snapshot exists only of a prefix some node applied, so every change at or below a
   * snapshot's index is known here by the time the snapshot is.
   */
  observeCommittedChange(e: Entry): void {
    const last = this.committedConfs[this.committedConfs.length - 1]!;
    if (e.index <= last.index) throw new Error(`membership change ${e.index} observed after ${last.index}`);
    this.committedConfs.push({ index: e.index, conf: applyConfChange(last.conf, decodeConfChange(e.data)) });
  }

  /** The snapshot `node` took, copied or received carries the committed configuration at its index. */
  checkSnapshotConf(node: NodeId, meta: SnapshotMeta): void {
    let expected = this.committedConfs[0]!.conf;
    for (const c of this.committedConfs) if (c.index <= meta.index) expected = c.conf;
    if (sameConf(meta.conf, expected)) return;
    fail(
      "snapshot-conf",
      `${node}'s snapshot ${meta.index}/t${meta.term} has ${show(meta.conf)}, the committed log ${show(expected)}`,
    );
  }

  /** A granted vote reached its candidate (before the candidate steps it). */
  observeGrant(m: VoteResponseMessage): void {
    if (m.type !== "vote-response" || m.reject) return;
    let g = this.grants.get(m.to);
    // A grant of an earlier election, delayed, must not hide those of the current one.
    if (g !== undefined && m.term < g.term) return;
    if (g === undefined || m.term > g.term) {
      g = { term: m.term, from: new Set() };
      this.grants.set(m.to, g);
    }
    g.from.add(m.from);
  }

  /**
   * `node` stepped a vote request: `before` is its state when it did, `after` its state once it had.
   * A vote it granted must go to a voter of its configuration.
   */
  observeVoteRequest(node: NodeId, m: VoteMessage, before: VoterState, after: VoterState): void {
    if (m.type !== "vote" || after.term !== m.term || after.vote !== m.from) return;
    if (before.term === m.term && before.vote === m.from) return;
    if (before.conf.voters.includes(m.from)) return;
    // A promotion commits before every voter has applied it: one holding it may vote for the node.
    if (this.committedConfs.some((c) => c.index > before.applied && c.conf.voters.includes(m.from))) return;
    fail("voters-only", `${node} votes for ${m.from} in term ${m.term}, not a voter of ${show(before.conf)}`);
  }

  /** `node`'s status after a step: `before` is what was last seen of it. */
  observeStatus(node: NodeId, before: RaftStatus | null, s: RaftStatus): void {
    const changed = before === null || before.role !== s.role || before.term !== s.term;
    if (s.role === "follower" || s.conf.voters.includes(node)) {
      if (changed && s.role === "leader") this.checkElection(node, s);
      return;
    }
    // The configuration only changes as entries are applied, after the step that made the role.
    if (s.role === "leader")
      fail("voters-only", `${node} leads term ${s.term}, not being a voter of ${show(s.conf)}`);
    if (changed) fail("voters-only", `${node} campaigns (${s.role}), not being a voter of ${show(s.conf)}`);
  }

  /**
   * A leader of `term` holds membership changes at `pending` beyond the committed index (what any node
   * has applied); there may be one.
   */
  checkUncommittedChanges(node: NodeId, term: number, pending: readonly number[]): void {
    if (pending.length <= 1) return;
    fail(
      "one-change-at-a-time",
      `${node}, leader of term ${term}, holds uncommitted membership changes at ${pending.join(", ")}`,
    );
  }

  private checkElection(node: NodeId, s: RaftStatus): void {
    const voters = s.conf.voters;
    const g = this.grants.get(node);
    const granted = g !== undefined && g.term === s.term ? [...g.from] : [];
    const counted = voters.filter((id) => id === node || granted.includes(id));
    const quorum = Math.floor(voters.length / 2) + 1;
    if (counted.length >= quorum) return;
    fail(
      "voters-only",
      `${node} won term ${s.term} with the votes of ${[node, ...granted].join(", ")}: ` +
        `${counted.length} of the ${quorum} voters of ${show(s.conf)} it needed`,
    );
  }
}

/**
 * Indexes of the membership changes after `committed` in a log: `stored` with `appended` (a Ready's
 * new entries, which replace what is stored from their first index on) written over it. Everything
 * after `committed` is in the log: a node's snapshot covers only what it applied.
 */
export function changesAfter(committed: number, stored: LogStorage, appended: readonly Entry[]): number[] {
  const out: number[] = [];
  const first = appended[0]?.index ?? Number.POSITIVE_INFINITY;
  const storedEnd = Math.min(stored.lastIndex(), first - 1);
  if (committed + 1 <= storedEnd) {
    for (const e of stored.entries(committed + 1, storedEnd + 1, Number.POSITIVE_INFINITY))
      if (e.type === "conf") out.push(e.index);
  }
  for (const e of appended) if (e.index > committed && e.type === "conf") out.push(e.index);
  return out;
}

function show(conf: ConfState): string {
  const learners = conf.learners ?? [];
  const voters = `voters [${conf.voters.join(", ")}]`;
  return learners.length === 0 ? voters : `${voters} learners [${learners.join(", ")}]`;
}

/** The same voters and learners, in any order. */
function sameConf(a: ConfState, b: ConfState): boolean {
  const key = (c: ConfState) =>
    `${[...c.voters].sort().join(",")}|${[...(c.learners ?? [])].sort().join(",")}`;
  return key(a) === key(b);
}

function fail(invariant: "voters-only" | "one-change-at-a-time" | "snapshot-conf", detail: string): never {
  throw new InvariantViolation(invariant, detail);
}
