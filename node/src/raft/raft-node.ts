import {
  applyConfChange,
  type ConfChange,
  confChangeProblem,
  decodeConfChange,
  encodeConfChange,
} from "./conf-change.js";
import { Configuration } from "./configuration.js";
import { ProposalRefusedError, RaftInvariantError } from "./errors.js";
import { entrySize, payloadEntrySize } from "./log-storage.js";
import { Progress } from "./progress.js";
import { type RaftOptions, type ResolvedRaftOptions, resolveRaftOptions } from "./raft-config.js";
import { RaftLog } from "./raft-log.js";
import { ReadIndexQueue } from "./read-index-queue.js";
import type {
  AppendMessage,
  AppendResponseMessage,
  ConfState,
  Entry,
  HardState,
  HeartbeatMessage,
  HeartbeatResponseMessage,
  Message,
  NodeId,
  RandomSource,
  ReadFailure,
  ReadIndexResponseMessage,
  ReadState,
  Ready,
  Role,
  Snapshot,
  SnapshotChunkMessage,
  SnapshotChunkResponseMessage,
  SnapshotMeta,
  SoftState,
  VoteMessage,
  VoteResponseMessage,
} from "./types.js";

export interface RaftStatus {
  readonly id: NodeId;
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
  readonly applied: number;
  readonly role: Role;
  readonly leader: NodeId | null;
  readonly lastIndex: number;
  readonly transferee: NodeId | null;
  /**
   * The highest commit index the current leader has announced in its appends (its own commit on the
   * leader): how far this node must apply to have caught up. 0 until a leader is heard from.
   */
  readonly leaderCommit: number;
  /** The configuration as of the applied index. */
  readonly conf: ConfState;
  /** Leader only: each member's replication state, learners included. */
  readonly progress: Readonly<Record<NodeId, ProgressStatus>>;
}

/** A member's replication state, as its leader sees it. */
export interface ProgressStatus {
  readonly match: number;
  readonly next: number;
  readonly state: string;
  /** Heard from within the last one or two election timeouts (check-quorum's rounds); the leader itself. */
  readonly active: boolean;
}

/**
 * A snapshot being received in chunks: the core counts the bytes, the driver keeps them (in a
 * temporary file, see snapshot-inbox.ts) until the last one arrives.
 */
export interface IncomingSnapshot {
  readonly meta: SnapshotMeta;
  readonly totalBytes: number;
  readonly checksum: number;
  /** Bytes received in order: the offset the next chunk must start at. */
  received: number;
}

const EMPTY = new Uint8Array(0);

type Distribute<T> = T extends Message ? Omit<T, "from" | "term"> & { term?: number } : never;
type Outgoing = Distribute<Message>;

/**
 * The Raft consensus core as a pure state machine, after the design of etcd-io/raft: ticks, messages,
 * proposals and reads go in; a `Ready` with entries and hard state to persist, messages to send,
 * committed entries to apply and read results comes out. It does no I/O and reads no clock; its only
 * randomness comes from the injected source.
 */
export class RaftNode {
  readonly id: NodeId;
  private readonly opts: ResolvedRaftOptions;
  /** The configuration as of the applied index: a `conf` entry takes effect once it is applied. */
  private conf: Configuration;
  /** Every configuration applied since the storage's snapshot, by the index that made it. */
  private confHistory: { index: number; conf: ConfState }[] = [];
  /** Leader only: the index of the last `conf` entry proposed; no other is proposed until it applies. */
  private pendingConfIndex = 0;
  private readonly random: RandomSource;
  private readonly log: RaftLog;

  private term = 0;
  private vote: NodeId | null = null;
  private role: Role = "follower";
  private leader: NodeId | null = null;

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;

  private readonly progress = new Map<NodeId, Progress>();
  private readonly votes = new Map<NodeId, boolean>();
  private transferee: NodeId | null = null;
  /**
   * Follower only: the term of a TimeoutNow that came while a committed configuration change was
   * still to apply. The campaign it asks for starts once that change has applied (advance()).
   */
  private transferCampaignTerm: number | null = null;

  /** Leader only: sizes of this term's uncommitted proposals, to bound the uncommitted tail. */
  private uncommittedQueue: { index: number; size: number }[] = [];
  private uncommittedHead = 0;
  private uncommittedBytes = 0;

  private readonly reads = new ReadIndexQueue();
  /** Follower only: reads forwarded to the leader, with the ticks they have waited. */
  private readonly forwardedReads = new Map<string, number>();
  private incoming: IncomingSnapshot | null = null;
  private leaderCommit = 0;
  /**
   * How far an append (or snapshot) of the current leader has shown our log to match its own; the
   * leader's heartbeats commit no further (handleHeartbeat).
   */
  private checkedUpTo = 0;

  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private readFailures: ReadFailure[] = [];
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Ready | null = null;

  constructor(options: RaftOptions) {
    this.opts = resolveRaftOptions(options);
    this.id = this.opts.id;
    this.random = this.opts.random;
    this.log = new RaftLog(this.opts.storage, this.opts.applied);

    const { hardState, conf } = this.opts.storage.initialState();
    if (hardState.commit < this.log.committed || hardState.commit > this.log.lastIndex()) {
      throw new RaftInvariantError(
        `hard state commit ${hardState.commit} is outside the stored log [${this.log.committed}, ${this.log.lastIndex()}]`,
      );
    }
    this.term = hardState.term;
    this.vote = hardState.vote;
    this.log.committed = hardState.commit;
    if (this.log.applied > this.log.committed) {
      throw new RaftInvariantError(`applied ${this.log.applied} is beyond commit ${this.log.committed}`);
    }
    this.conf = new Configuration(checkedConf(conf));
    this.confHistory.push({ index: this.log.firstIndex() - 1, conf: this.conf.state });
    // The changes applied after the snapshot are in the log: replay them up to the applied index, a
    // bounded page at a time.
    for (let next = this.log.firstIndex(); next <= this.log.applied; ) {
      const page = this.log.slice(next, this.log.applied + 1, this.opts.maxCommittedSizePerReady);
      for (const e of page) if (e.type === "conf") this.applyConfEntry(e);
      next += page.length;
    }
    this.prevHard = hardState;
    this.becomeFollower(this.term, null);
    this.prevSoft = this.softState();
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs

  /** Advances logical time by one tick. */
  tick(): void {
    if (this.role === "leader") this.tickLeader();
    else this.tickElection();
    this.tickForwardedReads();
  }

  /** Proposes one entry. Leader only; returns where it was appended. */
  propose(data: Uint8Array): { index: number; term: number } {
    const { firstIndex, term } = this.proposeBatch([data]);
    return { index: firstIndex, term };
  }

  /** Proposes several entries, appended together or not at all. */
  proposeBatch(data: readonly Uint8Array[]): { firstIndex: number; term: number } {
    this.checkCanPropose(data);
    const first = this.log.lastIndex() + 1;
    const entries: Entry[] = data.map((d, i) => ({
      term: this.term,
      index: first + i,
      type: "normal",
      data: d,
    }));
    this.appendEntries(entries);
    this.broadcastAppend(false);
    return { firstIndex: first, term: this.term };
  }

  /**
   * Asks for a linearizable read index. The answer arrives in a later Ready as a ReadState (serve the
   * read once the state machine has applied its index) or a ReadFailure.
   */
  readIndex(requestId: string): void {
    if (this.role === "leader") {
      this.handleReadRequest(requestId, null);
      return;
    }
    if (this.leader === null) throw new ProposalRefusedError("NoLeader", null, "no leader is known");
    this.forwardedReads.set(requestId, 0);
    this.send({ type: "read-index", to: this.leader, requestId });
  }

  /**
   * Proposes one membership change. Leader only, and one at a time: refused while an earlier change is
   * not yet applied (a new leader first commits an entry of its own term), or when the change does
   * not apply to the configuration. It takes effect on each node when applied.
   */
  proposeConfChange(change: ConfChange): { index: number; term: number } {
    this.checkCanPropose([]);
    if (this.pendingConfIndex > this.log.applied) {
      throw new ProposalRefusedError(
        "ConfChangePending",
        this.id,
        `the membership change at ${this.pendingConfIndex} is not applied yet`,
      );
    }
    const problem = confChangeProblem(this.conf.state, change);
    if (problem !== null) throw new ProposalRefusedError("InvalidConfChange", this.id, problem);
    const index = this.log.lastIndex() + 1;
    this.appendEntries([{ term: this.term, index, type: "conf", data: encodeConfChange(change) }]);
    this.pendingConfIndex = index;
    this.broadcastAppend(false);
    return { index, term: this.term };
  }

  /** The configuration in force: the latest one advance() recorded; reads no storage. */
  confState(): ConfState {
    return this.conf.state;
  }

  /**
   * The configuration the state machine had once it applied `index` (for a snapshot taken there).
   * Known once `advance()` has passed `index`: a driver may apply a Ready's entries before it advances
   * (during its fsync), and a configuration change among them is not recorded here until then, so an
   * index beyond the advanced one is refused rather than answered with the configuration before it.
   */
  confStateAt(index: number): ConfState {
    if (index > this.log.applied) {
      throw new RaftInvariantError(`the configuration at ${index} is not known before advance() passes it`);
    }
    let conf = this.confHistory[0]!.conf;
    for (const h of this.confHistory) if (h.index <= index) conf = h.conf;
    return conf;
  }

  /** Hands leadership to `to` once it is caught up (TimeoutNow). Leader only. */
  transferLeadership(to: NodeId): void {
    if (this.role !== "leader") {
      throw new ProposalRefusedError(
        this.leader === null ? "NoLeader" : "NotLeader",
        this.leader,
        "not the leader",
      );
    }
    // Leadership asked to stay here: a transfer under way is given up, and proposals go on.
    if (to === this.id) {
      this.transferee = null;
      return;
    }
    if (!this.conf.isVoter(to)) throw new RangeError(`${to} is not a voter`);
    if (this.transferee === to) return;
    this.transferee = to;
    // The transfer must finish within one election timeout or it is abandoned.
    this.electionElapsed = 0;
    const pr = this.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.send({ type: "timeout-now", to });
    else this.sendAppend(to, pr, true);
  }

  /** Starts an election at once (as if the election timeout elapsed). Only a voter campaigns. */
  campaign(): void {
    if (this.role !== "leader" && this.mayCampaign()) this.startCampaign(true, false);
  }

  /** Handles a message addressed to this node. Stale or unknown messages are dropped. */
  step(m: Message): void {
    if (m.to !== this.id || m.from === this.id) return;
    // Only a voter may ask for our vote (mayAskForVotes): a node that is not (removed, a learner, or
    // not yet added) must neither disturb our term nor be elected. We answer whatever we are
    // ourselves, as etcd-raft lets learners vote: a learner that has not yet applied its promotion (or
    // lost that knowledge in a crash) may be the vote a committed configuration needs, and only a
    // candidate that counts us as a voter counts our vote. A node with no configuration answers no one.
    if ((m.type === "vote" || m.type === "pre-vote") && !this.mayAskForVotes(m.from, m.confIndex)) return;
    if (m.term > this.term) {
      if (m.type === "vote" || m.type === "pre-vote") {
        // Check-quorum lease: while we hear from a live leader, ignore disruptive candidates.
        const inLease = this.leader !== null && this.electionElapsed < this.opts.electionTicks;
        if (inLease && !m.transfer) return;
      }
      if (m.type === "pre-vote") {
        // A pre-vote never changes our term.
      } else if (m.type === "pre-vote-response" && !m.reject) {
        // Granted pre-votes carry the term we would campaign in; the term is ours only if we win.
      } else if (m.type === "append" || m.type === "heartbeat" || m.type === "snapshot-chunk") {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, null);
      }
    } else if (m.term < this.term) {
      if (m.type === "append" || m.type === "heartbeat") {
        // A stale leader (e.g. healed from a partition) learns our term from this and steps down.
        this.acknowledge(m.from, 0, 0);
      } else if (m.type === "pre-vote") {
        this.send({ type: "pre-vote-response", to: m.from, reject: true });
      }
      return;
    }

    switch (m.type) {
      case "vote":
      case "pre-vote":
        this.handleVoteRequest(m);
        return;
      case "vote-response":
      case "pre-vote-response":
        this.handleVoteResponse(m);
        return;
    }

    if (this.role === "leader") {
      this.stepLeader(m);
      return;
    }
    this.stepNonLeader(m);
    // A snapshot half received that the log has since caught up past is of no use (its sender may be
    // gone): it is dropped, and with it the bytes the driver holds for it (SnapshotInbox).
    if (this.incoming !== null && this.incoming.meta.index <= this.log.committed) this.incoming = null;
  }

  // ---------------------------------------------------------------------------------------------
  // Ready / advance

  hasReady(): boolean {
    if (this.outstanding) return false;
    if (this.msgs.length > 0 || this.readStates.length > 0 || this.readFailures.length > 0) return true;
    if (this.log.unstable.entries.length > 0 || this.log.unstable.snapshot !== null) return true;
    if (this.log.hasNextCommittedEntries()) return true;
    if (!sameSoft(this.softState(), this.prevSoft)) return true;
    return !sameHard(this.hardState(), this.prevHard);
  }

  /** The next batch of work. Call `advance()` once it is handled, before asking for another. */
  ready(): Ready {
    if (this.outstanding) throw new RaftInvariantError("ready() called again before advance()");
    const soft = this.softState();
    const hard = this.hardState();
    const unstable = this.log.unstable;
    const committedEntries = this.log.nextCommittedEntries(this.opts.maxCommittedSizePerReady);
    const rd: Ready = {
      softState: sameSoft(soft, this.prevSoft) ? null : soft,
      hardState: sameHard(hard, this.prevHard) ? null : hard,
      entries: unstable.entries.slice(),
      snapshot: unstable.snapshot,
      committedEntries,
      messages: this.msgs,
      readStates: this.readStates,
      readFailures: this.readFailures,
    };
    const lastCommitted = committedEntries[committedEntries.length - 1];
    if (lastCommitted) this.log.applying = lastCommitted.index;
    this.prevSoft = soft;
    this.prevHard = hard;
    this.msgs = [];
    this.readStates = [];
    this.readFailures = [];
    this.outstanding = rd;
    return rd;
  }

  /** Confirms that the last Ready was persisted, sent and applied. */
  advance(): void {
    const rd = this.outstanding;
    if (!rd) throw new RaftInvariantError("advance() called without an outstanding ready()");
    this.outstanding = null;
    if (rd.snapshot) {
      this.log.unstable.stableSnapTo(rd.snapshot.meta.index);
      this.log.applied = Math.max(this.log.applied, rd.snapshot.meta.index);
      this.confHistory = [];
      this.setConf(rd.snapshot.meta.index, checkedConf(rd.snapshot.meta.conf));
    }
    // Entries replaced while the Ready was being persisted stay unstable; the persisted prefix
    // that still stands (same index and term, hence the same entry) does not.
    for (let i = rd.entries.length - 1; i >= 0; i--) {
      const e = rd.entries[i]!;
      if (this.log.unstable.term(e.index) === e.term) {
        this.log.unstable.stableTo(e.index, e.term);
        break;
      }
    }
    const lastCommitted = rd.committedEntries[rd.committedEntries.length - 1];
    if (lastCommitted) this.log.applied = Math.max(this.log.applied, lastCommitted.index);
    for (const e of rd.committedEntries) if (e.type === "conf") this.applyConfEntry(e);
    if (this.role === "leader") this.selfDurable();
    if (this.transferCampaignTerm === this.term && this.role === "follower" && this.mayCampaign()) {
      this.transferCampaignTerm = null;
      this.startCampaign(false, true);
    }
  }

  /**
   * Whether `id` is a voter of our configuration, or of one our log's unapplied entries lead to, or
   * campaigns under a configuration (applied, so committed, at `confIndex`) past the one we applied. A
   * promotion commits once a quorum holds it, and the promoted node may apply it while we hold it
   * unapplied; and a voter that lagged may not hold at all the changes that made the candidate a voter
   * (added, promoted, another removed) while a quorum committed them without it: were its requests
   * ignored, the committed configuration could lack the votes it needs (etcd-raft ignores no one). A
   * node whose removal we applied stays ignored: the configuration it campaigns under is older.
   */
  private mayAskForVotes(id: NodeId, confIndex: number): boolean {
    if (this.conf.isVoter(id)) return true;
    if (this.conf.voters.size === 0) return false;
    if (confIndex > this.log.applied) return true;
    let state = this.conf.state;
    let next = this.log.applied + 1;
    if (next < this.log.firstIndex()) {
      // A snapshot past what we applied is on its way in: the log goes on from its configuration.
      const pending = this.log.snapshot();
      if (pending === null) return false;
      state = pending.meta.conf;
      if (state.voters.includes(id)) return true;
      next = this.log.firstIndex();
    }
    const last = this.log.lastIndex();
    while (next <= last) {
      const page = this.log.slice(next, last + 1, this.opts.maxCommittedSizePerReady);
      for (const e of page) {
        if (e.type !== "conf") continue;
        state = applyConfChange(state, decodeConfChange(e.data));
        if (state.voters.includes(id)) return true;
      }
      next += page.length;
    }
    return false;
  }

  private applyConfEntry(entry: Entry): void {
    this.setConf(entry.index, applyConfChange(this.conf.state, decodeConfChange(entry.data)));
  }

  /** The index of the configuration applied last (a snapshot's, or its conf entry's). */
  private appliedConfIndex(): number {
    return this.confHistory[this.confHistory.length - 1]!.index;
  }

  /** Makes `state` the configuration from `index` on, and brings the leader's bookkeeping along. */
  private setConf(index: number, state: ConfState): void {
    this.conf = new Configuration(state);
    const floor = this.log.firstIndex() - 1;
    // Keep the last configuration at or below the storage's snapshot; older ones are no longer asked for.
    while (this.confHistory.length > 1 && this.confHistory[1]!.index <= floor) this.confHistory.shift();
    this.confHistory.push({ index, conf: state });
    if (this.role !== "leader") {
      // Removed (or made a learner) during its own campaign: the others' votes could still make a
      // quorum of the configuration it has left, and elect it.
      if (this.role !== "follower" && !this.promotable()) this.becomeFollower(this.term, null);
      return;
    }
    if (!this.conf.isVoter(this.id)) {
      // Removed (or made a learner): hand leadership to the most caught-up voter rather than leave the
      // cluster to wait out an election timeout, then stop leading.
      const successor = this.mostCaughtUpVoter();
      if (successor !== null) this.send({ type: "timeout-now", to: successor });
      this.becomeFollower(this.term, null);
      return;
    }
    for (const id of [...this.progress.keys()]) if (!this.conf.isMember(id)) this.progress.delete(id);
    for (const id of this.conf.peersOf(this.id)) {
      if (this.progress.has(id)) continue;
      const pr = new Progress(
        this.log.lastIndex() + 1,
        this.opts.maxInflightMsgs,
        this.opts.maxInflightBytes,
      );
      pr.recentActive = true;
      this.progress.set(id, pr);
      // Probe the new member at once rather than at the next heartbeat.
      this.sendAppend(id, pr, true);
    }
    if (this.transferee !== null && !this.conf.isVoter(this.transferee)) this.transferee = null;
    // A smaller quorum may commit at once; reads waiting on a removed voter may now be confirmed.
    if (this.maybeCommit()) this.broadcastAppend(true, true);
    else this.broadcastAppend(false);
    this.confirmReads();
  }

  private mostCaughtUpVoter(): NodeId | null {
    let best: NodeId | null = null;
    let bestMatch = -1;
    for (const id of this.conf.voters) {
      const match = this.progress.get(id)?.match ?? 0;
      if (id !== this.id && match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    return best;
  }

  /** Whether this node may campaign and vote: a voter of the configuration it has applied. */
  private promotable(): boolean {
    return this.conf.isVoter(this.id);
  }

  /**
   * Whether this node may campaign now: promotable, and holding no committed configuration change it
   * has not applied, as etcd-raft requires. It counts votes by the configuration it applied, and a
   * committed change tells it only a lower bound of where the cluster is: with {a,b,c} to {a,b,c,d}
   * committed and unapplied here, the cluster may already have committed {a,c,d} after it, and {b,c},
   * a majority of the first, shares no member with {a,d}, a majority of the last. Applied, the change
   * leaves it at most one change behind, where every majority of the one meets every majority of the
   * other (one member added, promoted or removed at a time).
   */
  private mayCampaign(): boolean {
    return this.promotable() && !this.behindConfChanges();
  }

  /** A committed configuration change is unapplied (or a snapshot that may hold one is pending). */
  private behindConfChanges(): boolean {
    let next = this.log.applied + 1;
    const last = this.log.committed;
    if (next <= last && next < this.log.firstIndex()) return true;
    while (next <= last) {
      const page = this.log.slice(next, last + 1, this.opts.maxCommittedSizePerReady);
      if (page.some((e) => e.type === "conf")) return true;
      next += page.length;
    }
    return false;
  }

  /** The leader's own entries became durable: count them toward the quorum (a single voter commits here). */
  private selfDurable(): void {
    const self = this.progress.get(this.id)!;
    if (self.maybeUpdate(this.selfMatchIndex()) && this.maybeCommit()) this.broadcastAppend(true, true);
  }

  /**
   * How far the leader's own log counts toward a quorum: only what is durable. Protected so a test can
   * build a deliberately broken core that counts what it has not persisted.
   */
  protected selfMatchIndex(): number {
    return this.stableLastIndex();
  }

  /** The last index known durable: everything before the unstable tail. */
  private stableLastIndex(): number {
    const unstable = this.log.unstable;
    return unstable.entries.length > 0 ? unstable.offset - 1 : this.log.lastIndex();
  }

  status(): RaftStatus {
    const progress: Record<NodeId, ProgressStatus> = {};
    if (this.role === "leader") {
      for (const [id, pr] of this.progress) {
        const active = id === this.id || pr.recentActive || pr.activeRoundBefore;
        progress[id] = { match: pr.match, next: pr.next, state: pr.state, active };
      }
    }
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      commit: this.log.committed,
      applied: this.log.applied,
      role: this.role,
      leader: this.leader,
      lastIndex: this.log.lastIndex(),
      transferee: this.transferee,
      leaderCommit: this.role === "leader" ? this.log.committed : this.leaderCommit,
      conf: this.conf.state,
      progress,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Commitment

  /**
   * Figure 2: a leader commits by counting replicas only entries of its own term; earlier entries
   * commit indirectly with them. Protected so a test can build a deliberately broken core.
   */
  protected commitAllowed(index: number): boolean {
    return this.log.term(index) === this.term;
  }

  private maybeCommit(): boolean {
    const index = this.conf.quorumValue((id) => this.progress.get(id)?.match ?? 0);
    if (index <= this.log.committed || !this.commitAllowed(index)) return false;
    this.log.commitTo(index);
    this.releaseUncommitted(index);
    if (this.log.term(index) === this.term && this.reads.deferred.length > 0) {
      const deferred = this.reads.deferred;
      this.reads.deferred = [];
      for (const r of deferred) this.handleReadRequest(r.requestId, r.from);
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // Roles

  private softState(): SoftState {
    return { role: this.role, leader: this.leader, term: this.term };
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private reset(term: number): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = null;
      this.leaderCommit = 0;
    }
    this.leader = null;
    this.checkedUpTo = 0;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.opts.electionTicks + this.random.nextInt(this.opts.electionTicks);
    this.votes.clear();
    this.transferee = null;
    this.transferCampaignTerm = null;
    this.progress.clear();
    this.uncommittedQueue = [];
    this.uncommittedHead = 0;
    this.uncommittedBytes = 0;
    for (const r of this.reads.drain()) {
      if (r.from === null) this.readFailures.push({ requestId: r.requestId, reason: "LeadershipLost" });
    }
    this.failForwardedReads("LeadershipLost");
  }

  private becomeFollower(term: number, leader: NodeId | null): void {
    this.reset(term);
    this.role = "follower";
    this.leader = leader;
  }

  private becomePreCandidate(): void {
    // The term and vote stay as they are: a pre-vote must leave no trace if it fails.
    this.failForwardedReads("LeadershipLost");
    this.role = "pre-candidate";
    this.leader = null;
    this.votes.clear();
    this.electionElapsed = 0;
    this.randomizedElectionTimeout = this.opts.electionTicks + this.random.nextInt(this.opts.electionTicks);
  }

  private becomeCandidate(): void {
    this.reset(this.term + 1);
    this.role = "candidate";
    this.vote = this.id;
  }

  private becomeLeader(): void {
    // Those that granted this term's vote are known to be up; the rest count once they answer, so a
    // membership check right after an election does not count a voter that was down all along.
    const electedBy = new Set([...this.votes].filter(([, granted]) => granted).map(([id]) => id));
    this.reset(this.term);
    this.role = "leader";
    this.leader = this.id;
    const last = this.log.lastIndex();
    for (const id of [this.id, ...this.conf.peersOf(this.id)]) {
      const pr = new Progress(last + 1, this.opts.maxInflightMsgs, this.opts.maxInflightBytes);
      pr.recentActive = electedBy.has(id);
      if (id === this.id) {
        pr.match = this.selfMatchIndex();
        pr.becomeReplicate();
      }
      this.progress.set(id, pr);
    }
    // The no-op lets this term commit, and with it every entry of earlier terms. No membership change
    // is proposed before it applies: a change from an earlier term still in the log applies first, and
    // one-at-a-time changes stay safe only once the leader has committed an entry of its own term.
    this.appendEntries([{ term: this.term, index: last + 1, type: "noop", data: EMPTY }]);
    this.pendingConfIndex = last + 1;
    this.broadcastAppend(true);
  }

  private startCampaign(preVote: boolean, transfer: boolean): void {
    let term: number;
    let type: "vote" | "pre-vote";
    if (preVote) {
      this.becomePreCandidate();
      term = this.term + 1;
      type = "pre-vote";
    } else {
      this.becomeCandidate();
      term = this.term;
      type = "vote";
    }
    this.votes.set(this.id, true);
    if (this.countVotes() === "won") {
      if (preVote) this.startCampaign(false, transfer);
      else this.becomeLeader();
      return;
    }
    const index = this.log.lastIndex();
    const logTerm = this.log.lastTerm();
    const confIndex = this.appliedConfIndex();
    for (const to of this.conf.voters)
      if (to !== this.id) this.send({ type, to, term, index, logTerm, transfer, confIndex });
  }

  private countVotes(): "won" | "lost" | "pending" {
    let granted = 0;
    let rejected = 0;
    for (const [id, v] of this.votes) {
      if (!this.conf.isVoter(id)) continue;
      if (v) granted++;
      else rejected++;
    }
    const { quorum } = this.conf;
    if (granted >= quorum) return "won";
    if (rejected > this.conf.voters.size - quorum) return "lost";
    return "pending";
  }

  // ---------------------------------------------------------------------------------------------
  // Ticks

  private tickElection(): void {
    this.electionElapsed++;
    if (this.electionElapsed >= this.randomizedElectionTimeout && this.promotable()) {
      this.electionElapsed = 0;
      if (!this.behindConfChanges()) this.startCampaign(true, false);
    }
  }

  private tickLeader(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.opts.electionTicks) {
      this.electionElapsed = 0;
      // Check-quorum: a leader that heard from no quorum for an election timeout steps down, so the
      // minority side of a partition stops taking writes.
      let active = 0;
      for (const [id, pr] of this.progress) {
        if (this.conf.isVoter(id) && (id === this.id || pr.recentActive)) active++;
        if (id !== this.id) {
          pr.activeRoundBefore = pr.recentActive;
          pr.recentActive = false;
        }
      }
      if (active < this.conf.quorum) {
        this.becomeFollower(this.term, null);
        return;
      }
      this.transferee = null;
    }
    if (this.heartbeatElapsed >= this.opts.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.noteStalledTransfers();
      this.broadcastHeartbeat();
    }
  }

  /**
   * Marks each snapshot transfer that had no chunk acknowledged during the heartbeat interval just
   * ended. Measured here, by the clock, because heartbeats also go out for every read barrier: answers
   * to those come faster than a follower that writes each chunk to disk before acknowledging it.
   */
  private noteStalledTransfers(): void {
    for (const [id, pr] of this.progress) {
      const t = pr.transfer;
      if (id === this.id || pr.state !== "snapshot" || !t) continue;
      t.stalled = t.ackedOffset === t.ackedAtInterval;
      t.ackedAtInterval = t.ackedOffset;
    }
  }

  private tickForwardedReads(): void {
    if (this.forwardedReads.size === 0) return;
    for (const [requestId, waited] of this.forwardedReads) {
      if (waited + 1 >= this.opts.electionTicks) {
        this.forwardedReads.delete(requestId);
        this.readFailures.push({ requestId, reason: "LeadershipLost" });
      } else {
        this.forwardedReads.set(requestId, waited + 1);
      }
    }
  }

  private failForwardedReads(reason: ReadFailure["reason"]): void {
    for (const requestId of this.forwardedReads.keys()) this.readFailures.push({ requestId, reason });
    this.forwardedReads.clear();
  }

  // ---------------------------------------------------------------------------------------------
  // Elections

  private handleVoteRequest(m: VoteMessage): void {
    const isPre = m.type === "pre-vote";
    const canVote =
      this.vote === m.from ||
      (this.vote === null && this.leader === null) ||
      // A pre-vote for a later term is granted whatever we voted in ours: it changes nothing.
      (isPre && m.term > this.term);
    const responseType = isPre ? "pre-vote-response" : "vote-response";
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      // The granted response carries the candidate's term so it counts toward that election.
      this.send({ type: responseType, to: m.from, term: m.term, reject: false });
      if (!isPre) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type: responseType, to: m.from, reject: true });
    }
  }

  private handleVoteResponse(m: VoteResponseMessage): void {
    const expected =
      this.role === "pre-candidate"
        ? "pre-vote-response"
        : this.role === "candidate"
          ? "vote-response"
          : null;
    if (m.type !== expected) return;
    this.votes.set(m.from, !m.reject);
    const result = this.countVotes();
    if (result === "won") {
      if (this.role === "pre-candidate") this.startCampaign(false, false);
      else this.becomeLeader();
    } else if (result === "lost") {
      this.becomeFollower(this.term, null);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Leader

  private checkCanPropose(data: readonly Uint8Array[]): void {
    if (this.role !== "leader") {
      const reason = this.leader === null ? "NoLeader" : "NotLeader";
      throw new ProposalRefusedError(
        reason,
        this.leader,
        reason === "NoLeader" ? "no leader is known" : `the leader is ${this.leader}`,
      );
    }
    if (this.transferee !== null) {
      throw new ProposalRefusedError(
        "TransferInProgress",
        this.id,
        `leadership is being transferred to ${this.transferee}`,
      );
    }
    const max = this.opts.maxUncommittedEntriesBytes;
    if (max > 0 && this.uncommittedBytes > 0) {
      let size = 0;
      for (const d of data) size += payloadEntrySize(d);
      if (this.uncommittedBytes + size > max) {
        throw new ProposalRefusedError(
          "UncommittedBytesExceeded",
          this.id,
          `the uncommitted tail holds ${this.uncommittedBytes} bytes; ${size} more would exceed ${max}`,
        );
      }
    }
  }

  private appendEntries(entries: Entry[]): void {
    this.log.append(entries);
    for (const e of entries) {
      if (e.type === "noop") continue;
      const size = entrySize(e);
      this.uncommittedQueue.push({ index: e.index, size });
      this.uncommittedBytes += size;
    }
    // The leader's own copy counts toward a quorum only once it is durable (see advance()), which is
    // what lets the driver send these entries to the followers while it writes them. Asked here too,
    // where it changes nothing for this core, so that a core counting its copy sooner does so at once.
    if (this.role === "leader") this.selfDurable();
  }

  private releaseUncommitted(committed: number): void {
    const q = this.uncommittedQueue;
    while (this.uncommittedHead < q.length && q[this.uncommittedHead]!.index <= committed) {
      this.uncommittedBytes -= q[this.uncommittedHead]!.size;
      this.uncommittedHead++;
    }
    if (this.uncommittedHead === q.length) {
      this.uncommittedQueue = [];
      this.uncommittedHead = 0;
    }
  }

  /** `commitNotice`: the commit moved, and an entry-less append only tells a follower so. */
  private broadcastAppend(sendIfEmpty: boolean, commitNotice = false): void {
    for (const [id, pr] of this.progress)
      if (id !== this.id) this.sendAppend(id, pr, sendIfEmpty, commitNotice);
  }

  private broadcastHeartbeat(): void {
    const readRound = this.reads.hasPending() ? this.reads.round : 0;
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      // Never tell a follower to commit past what it is known to hold.
      const commit = Math.min(pr.match, this.log.committed);
      this.send({ type: "heartbeat", to: id, commit, readRound });
    }
  }

  /**
   * Sends the follower what it lacks: as many append messages as its flow control allows, or a
   * snapshot when the entries it needs are compacted away.
   */
  private sendAppend(to: NodeId, pr: Progress, sendIfEmpty: boolean, commitNotice = false): void {
    let sentAny = false;
    while (!pr.isPaused()) {
      const prevIndex = pr.next - 1;
      const prevTerm = this.log.term(prevIndex);
      const last = this.log.lastIndex();
      if (prevTerm === null || pr.next < this.log.firstIndex()) {
        this.startSnapshot(to, pr);
        return;
      }
      if (pr.next > last && (sentAny || !sendIfEmpty)) return;
      const entries = this.log.slice(pr.next, last + 1, this.opts.maxSizePerMsg);
      this.send({
        type: "append",
        to,
        index: prevIndex,
        logTerm: prevTerm,
        entries,
        commit: this.log.committed,
        epoch: pr.epoch,
        ...(commitNotice && entries.length === 0 ? { commitNotice: true as const } : {}),
      });
      sentAny = true;
      const lastSent = entries[entries.length - 1];
      if (pr.state === "replicate") {
        if (!lastSent) return;
        let bytes = 0;
        for (const e of entries) bytes += entrySize(e);
        pr.next = lastSent.index + 1;
        pr.inflights.add(lastSent.index, bytes);
      } else {
        pr.probeSent = true;
      }
    }
  }

  private startSnapshot(to: NodeId, pr: Progress): void {
    const snapshot = this.log.snapshot();
    if (snapshot === null) {
      // Storage is preparing one: send nothing. A follower waiting for a snapshot is probed, so the
      // next heartbeat answer (match < lastIndex) comes back here through sendAppend; a replicate
      // window would only track appends that can no longer be sent.
      if (pr.state === "replicate") pr.becomeProbe();
      return;
    }
    if (snapshot.meta.index === 0)
      throw new RaftInvariantError(`follower ${to} needs a snapshot but none exists`);
    pr.becomeSnapshot(snapshot);
    this.sendSnapshotChunks(to, pr);
  }

  /** Sends chunks within the window after the acknowledged offset; always at least one after a rewind. */
  private sendSnapshotChunks(to: NodeId, pr: Progress): void {
    const t = pr.transfer;
    if (!t) return;
    const total = t.snapshot.size;
    const chunk = this.opts.snapshotChunkBytes;
    const windowEnd = t.ackedOffset + chunk * this.opts.maxInflightSnapshotChunks;
    while ((!t.started || t.sentOffset < total) && t.sentOffset < windowEnd) {
      const end = Math.min(total, t.sentOffset + chunk);
      this.send({
        type: "snapshot-chunk",
        to,
        meta: t.snapshot.meta,
        offset: t.sentOffset,
        length: end - t.sentOffset,
        totalBytes: total,
        checksum: t.snapshot.checksum,
        data: null,
        epoch: pr.epoch,
      });
      t.sentOffset = end;
      t.started = true;
    }
  }

  private stepLeader(m: Message): void {
    const pr = this.progress.get(m.from);
    if (!pr) return;
    pr.recentActive = true;
    switch (m.type) {
      case "append-response":
        this.handleAppendResponse(m, pr);
        return;
      case "heartbeat-response":
        this.handleHeartbeatResponse(m, pr);
        return;
      case "snapshot-chunk-response":
        this.handleSnapshotChunkResponse(m, pr);
        return;
      case "read-index":
        this.handleReadRequest(m.requestId, m.from);
        return;
      default:
        return;
    }
  }

  private handleAppendResponse(m: AppendResponseMessage, pr: Progress): void {
    if (m.epoch < pr.trustedFromEpoch) return;
    if (m.reject) {
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (m.epoch === pr.epoch && m.rejectHint < pr.epochMatch) {
        // The follower no longer holds entries it acknowledged: its data directory was restored from
        // an old copy. Start over from what it has rather than probe forever above it. Only an answer
        // to an append of the current epoch proves it: that append left after the follower had
        // acknowledged `epochMatch`, and a healthy follower's hint never falls below an index it
        // acknowledged (its terms there are the leader's). A refusal from an earlier epoch may have
        // been overtaken on the wire by later acknowledgements, and believing it would resend the
        // log to a healthy follower.
        pr.restartFrom(hint);
        this.sendAppend(m.from, pr, false);
        return;
      }
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.sendAppend(m.from, pr, false);
      }
      return;
    }
    const oldPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) {
      if (oldPaused && !pr.isPaused()) this.sendAppend(m.from, pr, false);
      return;
    }
    switch (pr.state) {
      case "probe":
        pr.becomeReplicate();
        break;
      case "snapshot":
        if (pr.transfer && pr.match >= pr.transfer.snapshot.meta.index) {
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case "replicate":
        pr.inflights.freeLE(m.index);
        break;
    }
    if (this.maybeCommit()) this.broadcastAppend(true, true);
    else this.sendAppend(m.from, pr, false);
    if (m.from === this.transferee && pr.match === this.log.lastIndex()) {
      this.send({ type: "timeout-now", to: m.from });
    }
  }

  private handleHeartbeatResponse(m: HeartbeatResponseMessage, pr: Progress): void {
    pr.probeSent = false;
    const t = pr.transfer;
    if (pr.state === "snapshot" && t) {
      // No chunk was acknowledged for a whole heartbeat interval, yet the follower answers: chunks, or
      // its final answer, were lost. Resend from the acknowledged offset; past the end this is one
      // empty chunk, which makes the follower say where it stands.
      if (t.stalled) {
        // The resent window then has a whole interval of its own before it can count as stalled.
        t.stalled = false;
        t.ackedAtInterval = -1;
        this.rewindSnapshot(m.from, pr, t.ackedOffset);
      }
    } else if (pr.match < this.log.lastIndex() || m.unchecked) {
      // Appends or their answers were lost, or the follower (restarted) has no append of ours that
      // checked its log. Free a slot if the window is full and send even an empty append: a follower
      // missing entries rejects it, which restarts probing; one that has them commits.
      if (pr.state === "replicate" && pr.inflights.full()) pr.inflights.freeFirstOne();
      this.sendAppend(m.from, pr, true);
    }
    if (m.readRound > pr.readRound) {
      pr.readRound = m.readRound;
      this.confirmReads();
    }
  }

  private handleSnapshotChunkResponse(m: SnapshotChunkResponseMessage, pr: Progress): void {
    const t = pr.transfer;
    if (pr.state !== "snapshot" || !t) return;
    if (m.snapshotIndex !== t.snapshot.meta.index || m.snapshotTerm !== t.snapshot.meta.term) return;
    if (m.reject) {
      // The follower lost what it had received (it restarted). One rewind answers every rejection
      // naming the same offset, so the chunks already in flight cannot each trigger another window.
      if (m.nextOffset !== t.rewoundTo) this.rewindSnapshot(m.from, pr, m.nextOffset);
      return;
    }
    if (m.nextOffset <= t.ackedOffset) return;
    t.ackedOffset = m.nextOffset;
    t.rewoundTo = null;
    if (t.sentOffset < t.ackedOffset) t.sentOffset = t.ackedOffset;
    this.sendSnapshotChunks(m.from, pr);
  }

  private rewindSnapshot(to: NodeId, pr: Progress, offset: number): void {
    const latest = this.log.snapshot();
    if (latest === null) {
      // The log was compacted past a point with no snapshot file yet, so the one under way may be
      // superseded and its file gone: abandon it. Probing (after the abandoned snapshot, in case the
      // follower installed it and its answer was lost), the next heartbeat answer goes back through
      // sendAppend to startSnapshot, which sends the new snapshot once storage has made it.
      pr.becomeProbe();
      return;
    }
    if (latest.meta.index > pr.transfer!.snapshot.meta.index) {
      // A newer snapshot replaced the one under way: its file may be gone by the time the driver
      // reads the resent chunks, and the follower needs less log after the newer one anyway.
      pr.becomeSnapshot(latest);
      pr.transfer!.rewoundTo = 0;
      this.sendSnapshotChunks(to, pr);
      return;
    }
    const t = pr.transfer!;
    t.ackedOffset = offset;
    t.sentOffset = offset;
    t.started = false;
    t.rewoundTo = offset;
    this.sendSnapshotChunks(to, pr);
  }

  private handleReadRequest(requestId: string, from: NodeId | null): void {
    // Until an entry of this term commits the leader may not know the latest commit index.
    if (this.log.term(this.log.committed) !== this.term) {
      this.reads.deferred.push({ requestId, from });
      return;
    }
    const index = this.log.committed;
    if (this.conf.voters.size === 1) {
      this.answerRead(requestId, from, index);
      return;
    }
    const round = ++this.reads.round;
    this.reads.push({ requestId, from, index, round });
    this.broadcastHeartbeat();
  }

  private confirmReads(): void {
    const confirmed = this.conf.quorumValue((id) =>
      id === this.id ? this.reads.round : (this.progress.get(id)?.readRound ?? 0),
    );
    for (const r of this.reads.confirm(confirmed)) this.answerRead(r.requestId, r.from, r.index);
  }

  private answerRead(requestId: string, from: NodeId | null, index: number): void {
    if (from === null) this.readStates.push({ requestId, index });
    else this.send({ type: "read-index-response", to: from, requestId, index, reject: false });
  }

  // ---------------------------------------------------------------------------------------------
  // Followers and candidates

  private stepNonLeader(m: Message): void {
    switch (m.type) {
      case "append":
        this.acceptLeader(m.from);
        this.handleAppend(m);
        return;
      case "heartbeat":
        this.acceptLeader(m.from);
        this.handleHeartbeat(m);
        return;
      case "snapshot-chunk":
        this.acceptLeader(m.from);
        this.handleSnapshotChunk(m);
        return;
      case "timeout-now":
        if (this.role !== "follower" || m.from !== this.leader || !this.promotable()) return;
        // A leader that removed itself hands over once its removal commits, which the successor may
        // not have applied yet: it campaigns as soon as it has.
        if (this.behindConfChanges()) this.transferCampaignTerm = this.term;
        else this.startCampaign(false, true);
        return;
      case "read-index":
        this.send({
          type: "read-index-response",
          to: m.from,
          requestId: m.requestId,
          index: 0,
          reject: true,
        });
        return;
      case "read-index-response":
        this.handleReadIndexResponse(m);
        return;
      default:
        return;
    }
  }

  /** A message from the leader of our term: whatever our role, follow it. */
  private acceptLeader(from: NodeId): void {
    if (this.role !== "follower") this.becomeFollower(this.term, from);
    this.electionElapsed = 0;
    this.leader = from;
  }

  private handleAppend(m: AppendMessage): void {
    if (m.commit > this.leaderCommit) this.leaderCommit = m.commit;
    if (m.index < this.log.committed) {
      this.acknowledge(m.from, this.log.committed, m.epoch);
      return;
    }
    const conflict = this.log.matchTerm(m.index, m.logTerm) ? this.log.findConflict(m.entries) : 0;
    if (conflict !== 0 && conflict <= this.log.lastIndex()) this.withdrawAcknowledgements(conflict);
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew !== null) {
      this.acknowledge(m.from, lastNew, m.epoch);
      return;
    }
    // Tell the leader where our logs can next agree so it skips whole terms in one round trip.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send({
      type: "append-response",
      to: m.from,
      index: m.index,
      reject: true,
      rejectHint: hint.index,
      logTerm: hint.term,
      epoch: m.epoch,
    });
  }

  /**
   * Entries from `index` on are about to be replaced. Acknowledgements of them still waiting here for
   * the next Ready would leave only after that Ready persisted the replacement: they would vouch for
   * entries this node no longer holds, which another term's leader could count toward a commit.
   * Nothing is owed to their leader: it probes again.
   */
  private withdrawAcknowledgements(index: number): void {
    this.msgs = this.msgs.filter((m) => m.type !== "append-response" || m.reject || m.index < index);
  }

  /** A successful answer: our log matches the leader's up to `index`; `epoch` that of the message answered. */
  private acknowledge(to: NodeId, index: number, epoch: number): void {
    if (index > this.checkedUpTo) this.checkedUpTo = index;
    this.send({ type: "append-response", to, index, reject: false, rejectHint: 0, logTerm: 0, epoch });
  }

  private handleHeartbeat(m: HeartbeatMessage): void {
    // The leader sends the commit as far as it believes our log matches its own. That belief may be
    // stale: our data restored from an old copy may lack entries we acknowledged, or hold others at
    // their indexes (a deposed leader's, since overwritten). So commit only as far as an append of
    // this leader has checked our log, and ask for one to check the rest. etcd trusts the belief.
    this.log.commitTo(Math.min(m.commit, this.checkedUpTo));
    const unchecked = m.commit > this.log.committed;
    this.send({ type: "heartbeat-response", to: m.from, readRound: m.readRound, unchecked });
  }

  private handleSnapshotChunk(m: SnapshotChunkMessage): void {
    if (m.meta.index <= this.log.committed) {
      // We already hold everything the snapshot covers: tell the leader where we stand.
      this.incoming = null;
      this.acknowledge(m.from, this.log.committed, m.epoch);
      return;
    }
    let inc = this.incoming;
    if (!inc || !sameIncoming(inc, m)) {
      if (m.offset !== 0) {
        this.respondChunk(m, 0, true);
        return;
      }
      inc = { meta: m.meta, totalBytes: m.totalBytes, checksum: m.checksum, received: 0 };
      this.incoming = inc;
    }
    if (m.offset > inc.received) {
      // A gap: say where we stand (the leader's view may come from acknowledgements we lost in a
      // restart). The bytes after a gap are not kept: the driver writes only in order.
      this.respondChunk(m, inc.received, true);
      return;
    }
    if (m.offset === inc.received) inc.received += m.length;
    this.respondChunk(m, inc.received, false);
    if (inc.received < inc.totalBytes) return;
    this.incoming = null;
    this.restore({ meta: inc.meta, size: inc.totalBytes, checksum: inc.checksum });
    // Only the committed prefix is known to match the leader: entries we kept after a fast-forward
    // may come from a deposed leader and must not be acknowledged.
    this.acknowledge(m.from, this.log.committed, m.epoch);
  }

  private respondChunk(m: SnapshotChunkMessage, nextOffset: number, reject: boolean): void {
    this.send({
      type: "snapshot-chunk-response",
      to: m.from,
      snapshotIndex: m.meta.index,
      snapshotTerm: m.meta.term,
      nextOffset,
      reject,
    });
  }

  /**
   * Whether stepping `m` now would count its bytes into the incoming snapshot (starting one at offset
   * 0): the driver writes a chunk's bytes to its temporary file exactly when this holds, so the two
   * agree on what was received. Pure: it changes nothing.
   */
  takesSnapshotChunk(m: SnapshotChunkMessage): boolean {
    if (m.to !== this.id || m.from === this.id || m.term < this.term) return false;
    if (m.term === this.term && this.role === "leader") return false;
    if (m.meta.index <= this.log.committed) return false;
    const inc = this.incoming;
    if (inc && sameIncoming(inc, m)) return m.offset === inc.received && m.length > 0;
    return m.offset === 0;
  }

  /** The snapshot being received in chunks, as far as it has come; null when none is. */
  incomingSnapshot(): Readonly<IncomingSnapshot> | null {
    return this.incoming;
  }

  /** A snapshot received whole and not yet handed out persisted (the one the next Ready carries). */
  receivedSnapshot(): Snapshot | null {
    return this.log.unstable.snapshot;
  }

  /**
   * The driver could not keep `m`'s bytes (the assembled snapshot failed its checksum, or what it had
   * received before is gone): forget the incoming snapshot and ask the sender to start over.
   */
  refuseSnapshotChunk(m: SnapshotChunkMessage): void {
    this.incoming = null;
    if (m.to !== this.id || m.from === this.id || m.term < this.term) return;
    if (m.term > this.term) this.becomeFollower(m.term, m.from);
    if (this.role === "leader") return;
    this.acceptLeader(m.from);
    this.respondChunk(m, 0, true);
  }

  private restore(snapshot: Snapshot): void {
    const { index, term } = snapshot.meta;
    if (this.log.matchTerm(index, term)) {
      // Our log already holds the snapshot's last entry: keep the entries after it.
      this.log.commitTo(index);
      return;
    }
    this.withdrawAcknowledgements(index + 1);
    this.log.restore(snapshot);
  }

  private handleReadIndexResponse(m: ReadIndexResponseMessage): void {
    if (!this.forwardedReads.delete(m.requestId)) return;
    if (m.reject) this.readFailures.push({ requestId: m.requestId, reason: "NotLeader" });
    else this.readStates.push({ requestId: m.requestId, index: m.index });
  }

  // ---------------------------------------------------------------------------------------------

  private send(m: Outgoing): void {
    const full = { from: this.id, term: this.term, ...m } as Message;
    this.msgs.push(full);
  }
}

function sameSoft(a: SoftState, b: SoftState): boolean {
  return a.role === b.role && a.leader === b.leader && a.term === b.term;
}

function sameHard(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

/** Whether a chunk belongs to the snapshot being received (the same one, not a rewritten one). */
function sameIncoming(inc: IncomingSnapshot, m: SnapshotChunkMessage): boolean {
  return (
    inc.meta.index === m.meta.index &&
    inc.meta.term === m.meta.term &&
    inc.totalBytes === m.totalBytes &&
    inc.checksum === m.checksum
  );
}

/** A configuration read from storage or a snapshot, which the core trusts only once it is coherent. */
function checkedConf(conf: ConfState): ConfState {
  const members = [...conf.voters, ...(conf.learners ?? [])];
  if (new Set(members).size !== members.length)
    throw new RaftInvariantError(`the configuration names a member twice: ${members.join(", ")}`);
  return conf;
}
