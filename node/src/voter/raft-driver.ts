import { UnavailableError, UnknownWriteOutcomeError } from "@keyload/contract";
import type { Logger } from "pino";
import { memberName } from "../peer/member-name.js";
import type { ConfChange } from "../raft/conf-change.js";
import { ProposalRefusedError } from "../raft/errors.js";
import type { RaftOptions } from "../raft/raft-config.js";
import { RaftNode, type RaftStatus } from "../raft/raft-node.js";
import type { SeededRandom } from "../raft/seeded-random.js";
import { SnapshotInbox } from "../raft/snapshot-inbox.js";
import {
  type ConfState,
  canSendBeforePersist,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type Ready,
  type Snapshot,
} from "../raft/types.js";
import type { ApplyResult } from "../state/apply-result.js";
import type { DurableLogWriter } from "../storage/durable-log-writer.js";
import type { LogStore } from "../storage/log-store.js";
import type { SnapshotFile } from "../storage/snapshot-file-store.js";
import { StorageClosedError } from "../storage/storage-errors.js";
import { applySliceEnd } from "./apply-slices.js";
import { ApplyWaiters } from "./apply-waiters.js";
import type { DriverStateMachine } from "./driver-state-machine.js";
import { type DriverTimers, NODE_TIMERS, type TimerHandle } from "./driver-timers.js";
import { FileSnapshotSink } from "./file-snapshot-sink.js";
import { FollowerApplyPolicy } from "./follower-apply-policy.js";
import { HeldAppendOutbox } from "./held-append-outbox.js";
import { confChangeRefusal, unavailable } from "./proposal-errors.js";
import { type EntriesAhead, ProposalWaiters } from "./proposal-waiters.js";
import { type RaftTicks, raftTicks } from "./raft-ticks.js";
import type { RaftTransport } from "./raft-transport.js";
import { ReadWaiters } from "./read-waiters.js";
import { SnapshotBackoff } from "./snapshot-backoff.js";
import { sendOnceWritten } from "./snapshot-chunk-acks.js";
import { SnapshotSender } from "./snapshot-sender.js";
import { VoterFailedError } from "./voter-failed-error.js";

/** Something durable that tells, once, that a write of it failed. */
export interface FailureSource {
  onFailure(listener: (err: Error) => void): void;
}

export interface RaftDriverOptions {
  readonly id: NodeId;
  readonly voters: readonly NodeId[];
  readonly store: LogStore;
  readonly writer: DurableLogWriter;
  readonly stateMachine: DriverStateMachine;
  /** Other durable parts whose failed write stops the voter (the member identity). */
  readonly failureSources?: readonly FailureSource[];
  readonly transport: RaftTransport;
  readonly random: SeededRandom;
  readonly logger: Logger;
  readonly electionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly maxUncommittedBytes: number;
  /** How long a follower holds committed entries back when no append comes to carry their apply. */
  readonly followerApplyHoldMs: number;
  /** One chunk of a snapshot this voter sends; the core's default when absent. */
  readonly snapshotChunkBytes?: number;
  /** Node's timers unless given: the simulator's virtual ones when it runs the driver. */
  readonly timers?: DriverTimers;
  /** Builds the core; the simulator passes deliberately broken ones, or ones it watches. */
  readonly createCore?: (options: RaftOptions) => RaftNode;
  /** Tells this process's read requests apart from an earlier one's; random unless given. */
  readonly readIncarnation?: string;
}

/** Applied-index listeners, e.g. readiness checks waiting to catch up. */
export type AppliedListener = (index: number) => void;

/** One member of the configuration, by its Raft member ID and the voter it runs on. */
export interface Member {
  readonly id: NodeId;
  readonly name: string;
  readonly role: "voter" | "learner";
  /** On the leader: the last index known to match the leader's log (its own last index for itself). */
  readonly match?: number;
  /** On the leader: heard from lately (within about two election timeouts); true for itself. */
  readonly active?: boolean;
}

/**
 * Runs one Raft core for real: ticks on a timer, steps peer messages, and handles each Ready in order
 * (persist with group commit, then send, then apply to the state machine, then advance; a leader
 * whose proposer has the next batch ready applies a committed one after that batch is sent, see
 * `deferredApply`). Proposals and linearizable reads are promises resolved from what the state machine
 * applies.
 *
 * Fail-stop: when the log's storage or an apply fails, the driver stops taking part in Raft for good
 * (no tick, step, send or acknowledgement after it), fails everything waiting and settles `failed`;
 * whoever runs the voter ends the process there, and the restart recovers from what is durable. A
 * failed local snapshot alone is not such a failure: it is retried after a growing pause.
 */
export class RaftDriver {
  readonly raft: RaftNode;
  private readonly opts: RaftDriverOptions;
  private readonly proposals = new ProposalWaiters();
  /**
   * Committed entries not applied yet. A leader's go after its next Ready's messages are sent: a unit
   * the worker learns is committed lets it propose the next one, whose entries then reach the
   * followers first. A follower's are held back to be applied together (FollowerApplyPolicy): during a
   * later fsync, `followerApplyHoldMs` later (armHeldApply), or at once for a read or a forwarded
   * command's answer waiting for them (serveReads). And on any voter, the rest of a batch larger than
   * one slice, applied in the next turns (applyRestSoon).
   */
  private deferredApply: Entry[] = [];
  private readonly reads: ReadWaiters;
  /** Answers to forwarded commands waiting for the state machine to apply their entries. */
  private readonly applyWaiters: ApplyWaiters;
  private readonly timers: DriverTimers;
  private ticker: TimerHandle | undefined;
  private running = false;
  private looping = false;
  private wakeScheduled = false;
  private stopped: Promise<void> = Promise.resolve();
  private failure: VoterFailedError | null = null;
  /** The core's status when it stopped: a core whose log failed may not answer one any more. */
  private statusAtFailure: RaftStatus | null = null;
  private reportFailure: (failure: VoterFailedError) => void = () => undefined;
  /**
   * Settles, once, when storage or apply fails and this driver stops for good; never rejects, and
   * stays pending while nothing fails.
   */
  readonly failed: Promise<VoterFailedError> = new Promise((resolve) => {
    this.reportFailure = resolve;
  });
  private snapshotting: Promise<unknown> = Promise.resolve();
  private snapshotInProgress = false;
  private readonly snapshotBackoff = new SnapshotBackoff();
  /** A follower's side of a streamed snapshot: chunks go to a temporary file before the core counts them. */
  private readonly inbox: SnapshotInbox<FileSnapshotSink>;
  /** A leader's side: each chunk's bytes are read from the snapshot file as it is sent. */
  private readonly snapshotSender: SnapshotSender;
  private lastRole: RaftStatus["role"] = "follower";
  /** The latest hard state whose only change, the commit index, no write has carried yet. */
  private unsavedCommit: HardState | null = null;
  /** The hard state of the last Ready handed to the writer (the stored one at start). */
  private lastHard: HardState;
  /** A leader's entry-less appends, held until the next message to their follower (see send). */
  private readonly heldAppends: HeldAppendOutbox;
  private readonly followerApply: FollowerApplyPolicy;
  /** Applies what a follower held back once no append has come to carry it (see deferredApply). */
  private heldApplyTimer: TimerHandle | undefined;
  /** The rest of a batch larger than a slice is to be applied in the next turn (applyRestSoon). */
  private applyRestScheduled = false;
  /** The leader this voter last knew of, and the changes to another one it has seen (leaderChanges). */
  private lastLeader: NodeId | null = null;
  private leaderChangesSeen = 0;
  /** Told after each batch applied to the state machine (see onBatchApplied). */
  private readonly applyListeners: ((seconds: number, entries: number) => void)[] = [];
  /** The Raft core's clock: how often it ticks, and its timeouts in ticks. */
  private readonly ticks: RaftTicks;

  constructor(options: RaftDriverOptions) {
    this.opts = options;
    this.timers = options.timers ?? NODE_TIMERS;
    this.lastHard = options.store.initialState().hardState;
    this.reads = new ReadWaiters(options.id, this.timers, options.readIncarnation);
    this.applyWaiters = new ApplyWaiters(this.timers);
    this.heldAppends = new HeldAppendOutbox((m) => this.opts.transport.send(m));
    this.followerApply = new FollowerApplyPolicy(options.id, options.voters);
    this.ticks = raftTicks(options.electionTimeoutMs, options.heartbeatIntervalMs);
    this.raft = (options.createCore ?? ((o) => new RaftNode(o)))({
      id: options.id,
      storage: options.store,
      random: options.random,
      applied: options.stateMachine.applied().index,
      electionTicks: this.ticks.electionTicks,
      heartbeatTicks: this.ticks.heartbeatTicks,
      maxUncommittedEntriesBytes: options.maxUncommittedBytes,
      ...(options.snapshotChunkBytes === undefined ? {} : { snapshotChunkBytes: options.snapshotChunkBytes }),
    });
    this.inbox = new SnapshotInbox(
      (snap) => new FileSnapshotSink(options.store.snapshotFiles.receive(snap.meta, snap.size)),
    );
    this.snapshotSender = new SnapshotSender(
      options.store,
      (m, released) => {
        if (this.failure === null && this.running) this.opts.transport.send(m, released);
        else released();
      },
      (err) => this.fail(err),
    );
    // A failure of the store's background work (absorb, checkpoint, WAL fsync), or of the state's
    // commit or fsync met off the apply path (a read's flush, a snapshot point), stops the voter at
    // once, not at its next write.
    options.store.onFailure((err) => this.fail(err));
    options.stateMachine.onFailure((err) => this.fail(err));
    for (const source of options.failureSources ?? []) source.onFailure((err) => this.fail(err));
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.opts.transport.onMessage((m: Message) => {
      if (!this.running || this.failure !== null) return;
      // The core reads the log while it steps and ticks: a store that failed throws here.
      try {
        this.inbox.step(this.raft, m);
      } catch (err) {
        this.fail(err);
        return;
      }
      this.wake();
    });
    this.ticker = this.timers.setInterval(() => {
      if (this.failure !== null) return;
      try {
        this.raft.tick();
        this.closeFinishedTransfers();
      } catch (err) {
        this.fail(err);
        return;
      }
      this.wake();
    }, this.ticks.tickMs);
    this.wake();
  }

  /** What stopped this driver for good, or null while it has not failed. */
  failureCause(): VoterFailedError | null {
    return this.failure;
  }

  /**
   * The core's status, with the index the state machine has applied (the core counts what it handed
   * out) and the leader as the name of the voter it runs on, which the peer network reaches.
   */
  status(): RaftStatus {
    const status = this.statusAtFailure ?? this.raft.status();
    return {
      ...status,
      leader: status.leader === null ? null : memberName(status.leader),
      applied: this.opts.stateMachine.applied().index,
    };
  }

  isLeader(): boolean {
    return this.failure === null && this.raft.status().role === "leader";
  }

  /**
   * How many times this voter has seen the leader change to another member (or the same one again
   * after a spell without a leader) since it started, its first leader included, as etcd's
   * leader_changes_seen counts them.
   */
  leaderChanges(): number {
    return this.leaderChangesSeen;
  }

  /**
   * Calls `listener` after each batch of committed entries applied to the state machine, with the
   * seconds the state machine took and the batch's entries. For metrics.
   */
  onBatchApplied(listener: (seconds: number, entries: number) => void): void {
    this.applyListeners.push(listener);
  }

  /**
   * Proposes entries (leader only) and resolves with each one's apply result. Refused before anything
   * is appended: Unavailable. Appended but overwritten by another leader, or cut short by `signal`:
   * UnknownWriteOutcome, since the caller cannot know whether a later leader committed it.
   * `committed` is called, from inside the handling of a Ready and before the apply, once the batch's
   * entries are committed as proposed; never when another leader overwrote them. When it returns true
   * (more to propose at once), the apply waits until the next Ready's messages are sent, but for the
   * entries `ahead` names, which are applied at the commit and whose results it hears at once.
   */
  propose(
    data: readonly Uint8Array[],
    signal?: AbortSignal,
    committed?: () => boolean,
    ahead?: EntriesAhead,
  ): Promise<ApplyResult[]> {
    this.checkUsable();
    let first: number;
    let term: number;
    try {
      ({ firstIndex: first, term } = this.raft.proposeBatch(data));
    } catch (err) {
      if (err instanceof ProposalRefusedError) throw unavailable(err);
      throw err;
    }
    this.wake();
    return this.proposals.add(first, data.length, term, signal, committed, ahead);
  }

  /**
   * A linearizable read barrier (ReadIndex): resolves once the local state machine has applied
   * everything committed when the read began. Rejects with Unavailable when no leader confirms it.
   */
  readBarrier(timeoutMs = this.opts.electionTimeoutMs * 2): Promise<void> {
    this.checkUsable();
    const requestId = this.reads.nextRequestId();
    try {
      this.raft.readIndex(requestId);
    } catch (err) {
      if (err instanceof ProposalRefusedError) throw unavailable(err);
      throw err;
    }
    this.wake();
    return this.reads.wait(requestId, timeoutMs);
  }

  /**
   * Proposes one membership change (leader only) and resolves once this voter has applied it. Refused
   * before anything is appended: Unavailable when this voter does not lead, FailedPrecondition
   * `ConfChangePending` while an earlier change is not applied, InvalidArgument `InvalidConfChange`
   * when it does not apply to the configuration. Overwritten by another leader: UnknownWriteOutcome.
   * `signal` cuts the wait short with UnknownWriteOutcome `ReplicationDeadline`.
   */
  async proposeConfChange(change: ConfChange, signal?: AbortSignal): Promise<void> {
    // Async, so that a refusal rejects the promise rather than throwing at the call.
    this.checkUsable();
    let index: number;
    let term: number;
    try {
      ({ index, term } = this.raft.proposeConfChange(change));
    } catch (err) {
      if (err instanceof ProposalRefusedError) throw confChangeRefusal(err);
      throw err;
    }
    this.wake();
    await this.proposals.add(index, 1, term, signal);
  }

  /**
   * The members of the configuration this voter has applied, each a voter or a learner; on the leader
   * with how far each one's log matches its own.
   */
  members(): Member[] {
    const status = this.status();
    const member = (id: NodeId, role: Member["role"]): Member => {
      const progress = status.progress[id];
      const match = id === this.opts.id ? status.lastIndex : progress?.match;
      return {
        id,
        name: memberName(id),
        role,
        ...(match === undefined ? {} : { match }),
        ...(progress === undefined ? {} : { active: progress.active }),
      };
    };
    return [
      ...status.conf.voters.map((id) => member(id, "voter")),
      ...(status.conf.learners ?? []).map((id) => member(id, "learner")),
    ];
  }

  /**
   * Hands leadership to the most caught-up voter (a learner, however far ahead, cannot lead) and waits
   * (bounded) until this node is no longer leader.
   */
  async transferLeadership(timeoutMs = this.opts.electionTimeoutMs): Promise<boolean> {
    if (this.failure !== null) return false;
    const status = this.raft.status();
    if (status.role !== "leader") return false;
    let best: NodeId | null = null;
    let bestMatch = -1;
    for (const id of status.conf.voters) {
      const match = status.progress[id]?.match ?? -1;
      if (id !== this.opts.id && match > bestMatch) {
        best = id;
        bestMatch = match;
      }
    }
    if (best === null) return false;
    this.raft.transferLeadership(best);
    this.wake();
    return this.waitUntil(() => this.raft.status().role !== "leader", timeoutMs);
  }

  /**
   * Hands leadership to the voter `to` (leader only: Unavailable with the leader hint elsewhere) and
   * resolves true once this node follows it, false when `timeoutMs` passed first.
   */
  async transferLeadershipTo(to: NodeId, timeoutMs: number): Promise<boolean> {
    this.checkUsable();
    try {
      this.raft.transferLeadership(to);
    } catch (err) {
      if (err instanceof ProposalRefusedError) throw unavailable(err);
      throw err;
    }
    this.wake();
    return this.waitUntil(() => this.raft.status().leader === to, timeoutMs);
  }

  private async waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = this.timers.now() + timeoutMs;
    while (this.timers.now() < deadline) {
      await new Promise<void>((r) => this.timers.setTimeout(r, 10));
      if (done()) return true;
    }
    return false;
  }

  /** Stops ticking and stepping, finishes the Ready in progress, fails everything still waiting. */
  async stop(): Promise<void> {
    if (!this.running) return this.stopped;
    this.running = false;
    this.timers.clearInterval(this.ticker);
    this.timers.clearTimeout(this.heldApplyTimer);
    this.heldAppends.clear();
    await this.stopped;
    await this.snapshotting.catch(() => undefined);
    this.inbox.clear();
    await this.snapshotSender.closeAll();
    if (this.unsavedCommit !== null && this.failure === null) {
      await this.opts.writer.writeCommitIndex(this.unsavedCommit).catch(() => undefined);
      this.unsavedCommit = null;
    }
    const err = new UnknownWriteOutcomeError("the voter stopped before the outcome was known", {
      reason: "ShuttingDown",
    });
    this.proposals.rejectAll(err);
    this.proposals.dropNotices();
    // A confirmed read waits for an apply that will no longer come: it fails now, not at its timeout.
    this.reads.rejectAll(new UnavailableError("the voter is stopping", { reason: "ShuttingDown" }));
    this.applyWaiters.releaseAll();
  }

  private checkUsable(): void {
    if (this.failure)
      throw new UnavailableError("this voter's storage or apply failed; it must restart", {
        reason: "StorageFailed",
        cause: this.failure,
      });
    if (!this.running) throw new UnavailableError("the voter is not running", { reason: "ShuttingDown" });
  }

  /** Schedules the Ready loop; calls within one turn of the event loop share a single pass. */
  private wake(): void {
    if (this.wakeScheduled || this.looping || this.failure !== null) return;
    this.wakeScheduled = true;
    this.timers.setImmediate(() => {
      this.wakeScheduled = false;
      if (!this.looping) this.stopped = this.loop();
    });
  }

  private async loop(): Promise<void> {
    this.looping = true;
    try {
      while (this.failure === null && this.raft.hasReady()) {
        await this.handle(this.raft.ready());
      }
      // No next unit came to go first: what a leader deferred is applied now.
      if (this.failure === null && this.deferredApply.length > 0) {
        if (this.lastRole === "leader") {
          this.apply([]);
          this.serveReads();
          this.maybeSnapshot();
        } else {
          this.armHeldApply();
        }
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.looping = false;
    }
    if (this.running && this.failure === null && this.raft.hasReady()) this.wake();
  }

  private async handle(rd: Ready): Promise<void> {
    if (rd.softState) this.onSoftState(rd);
    const noticed = this.proposals.noticeCommits(rd.committedEntries);
    // A leader's replication traffic goes out while its own copy is written (the core counts that
    // copy toward a quorum only after advance()); everything else waits for the fsync.
    for (const m of rd.messages) if (canSendBeforePersist(m)) this.send(m);
    let committed = rd.committedEntries;
    const hard = rd.hardState;
    if (
      rd.snapshot ||
      rd.entries.length > 0 ||
      (hard && !this.onlyCommitMoved(hard)) ||
      this.commitsConfChange(rd)
    ) {
      // A commit index held back from earlier Readies rides along with this write.
      const hardState = hard ?? (rd.snapshot ? null : this.unsavedCommit);
      this.unsavedCommit = null;
      // A received snapshot is sealed (checked against its checksum, fsynced, named) before the write
      // that switches the log to it; only after both does anything acknowledge it.
      const snapshot = rd.snapshot ? await this.sealReceived(rd.snapshot) : null;
      const site = this.followerApply.fsyncSite(this.lastRole, this.deferredApply.length, rd);
      this.opts.store.setFsyncSite(site);
      const written = this.opts.writer.write({ snapshot, entries: rd.entries, hardState });
      // Awaited only after the apply below; a failure meanwhile must not count as unhandled.
      written.catch(() => undefined);
      try {
        if (site === "thread-pool") committed = await this.applyWhileSyncing(rd);
      } finally {
        await written;
      }
      // The store failed meanwhile in its background work: this write's acknowledgements stay unsent.
      if (this.failure !== null) return;
    } else if (hard) {
      // Only the commit index moved: nothing in this Ready vouches for it, so it is neither waited for
      // nor written on its own (etcd's MustSync): the next write carries it, and one a crash loses is
      // raised again at start (raiseCommitToApplied). An fsync here would stand between a quorum's
      // acknowledgement and the apply that answers the client, and stall a follower's next append.
      this.unsavedCommit = hard;
    }
    if (hard) this.lastHard = hard;
    let answered = false;
    for (const m of rd.messages) {
      if (canSendBeforePersist(m)) continue;
      this.send(m);
      answered = true;
    }
    // Acknowledgements and votes leave before this Ready's apply, which can take milliseconds; a
    // leader's commit notices instead wait for the end of the turn, after the answers the apply releases.
    if (answered) this.opts.transport.flush();
    const sm = this.opts.stateMachine;
    if (rd.snapshot) {
      this.apply([], true);
      const path = this.opts.store.currentSnapshotPath();
      if (path === null) throw new Error("a persisted snapshot has no file");
      sm.restoreFromSnapshot(path);
      this.proposals.failUpTo(rd.snapshot.meta.index);
      this.opts.logger.info(
        { index: rd.snapshot.meta.index, term: rd.snapshot.meta.term },
        "installed snapshot from the leader",
      );
    }
    if (noticed.more && this.lastRole === "leader" && rd.entries.length === 0 && rd.snapshot === null) {
      // What a proposer wants answered at once (its control commands) is applied now, with what
      // precedes it; only the rest waits for the next unit's appends (decision 0026).
      let ahead = 0;
      while (ahead < committed.length && committed[ahead]!.index <= noticed.aheadUpTo) ahead++;
      if (noticed.aheadUpTo > 0) this.apply(committed.slice(0, ahead), true);
      for (let i = ahead; i < committed.length; i++) this.deferredApply.push(committed[i]!);
    } else if (
      rd.snapshot === null &&
      this.followerApply.holdsBack(this.lastRole, this.deferredApply.length, committed.length)
    ) {
      for (const entry of committed) this.deferredApply.push(entry);
      this.armHeldApply();
    } else {
      this.apply(committed);
    }
    this.reads.confirm(rd.readStates);
    this.reads.refuse(rd.readFailures);
    this.serveReads();
    this.raft.advance();
    this.maybeSnapshot();
  }

  /**
   * Applies the committed entries below this Ready's new ones (after those an earlier Ready
   * deferred) once the new ones' fsync is under way on the thread pool (DurableLogWriter.syncStarted),
   * as etcd applies while it persists: on a leader their answers do not wait for this fsync, and a
   * follower's next append does not wait for a long apply after it. Those entries are durable here
   * already: each Ready is persisted before the next one is handled. Returns the committed entries
   * left to apply after the write. The replication traffic is flushed first, so the followers get the
   * new entries before the answers go out (docs/decisions/0011-leader-applies-during-its-fsync.md).
   */
  private async applyWhileSyncing(rd: Ready): Promise<readonly Entry[]> {
    const committed = rd.committedEntries;
    if (rd.snapshot !== null) return committed;
    const firstNew = rd.entries[0]?.index ?? Number.POSITIVE_INFINITY;
    let stable = 0;
    // A membership change waits for the write: the core takes it at advance(), after the write, and
    // its proposer, answered at the apply, must find it taken.
    while (
      stable < committed.length &&
      committed[stable]!.index < firstNew &&
      committed[stable]!.type !== "conf"
    )
      stable++;
    if (stable === 0 && this.deferredApply.length === 0) return committed;
    await this.opts.writer.syncStarted();
    this.opts.transport.flush();
    this.apply(committed.slice(0, stable));
    return committed.slice(stable);
  }

  /**
   * Sends one message; a leader's entry-less append is held until the next message to its follower
   * (HeldAppendOutbox). A follower so applies what committed at most one heartbeat late, which nothing
   * waits for: reads through it get their confirmation after the held commit index, and the answer to
   * a command it forwarded goes after it (releaseHeldAppend).
   */
  private send(m: Message): void {
    // A failed voter acknowledges nothing, whatever a Ready still in hand holds.
    if (this.failure !== null) return;
    if (m.type === "snapshot-chunk") {
      this.snapshotSender.send(m);
      return;
    }
    const leading = this.lastRole === "leader";
    sendOnceWritten(
      this.inbox,
      m,
      (ready) => {
        // A chunk's acknowledgement may leave turns later: by then the voter may have stopped.
        if (this.failure === null && this.running) this.heldAppends.send(ready, leading);
      },
      // The snapshot's temporary file could not be written: as any storage failure, fail-stop.
      (err) => this.fail(err),
    );
  }

  /** Seals the snapshot the leader streamed into a temporary file, once its bytes match. */
  private async sealReceived(snapshot: Snapshot): Promise<SnapshotFile> {
    const sink = this.inbox.take(snapshot);
    const sealed = await sink.seal(snapshot.checksum);
    this.opts.logger.info(
      { index: snapshot.meta.index, term: snapshot.meta.term, bytes: snapshot.size, chunks: sink.chunks },
      "received snapshot from the leader",
    );
    return sealed;
  }

  /** Closes the snapshot files of transfers the core ended (caught up, removed, or no longer leading). */
  private closeFinishedTransfers(): void {
    const open = this.snapshotSender.following();
    if (open.length === 0) return;
    const status = this.raft.status();
    for (const id of open) {
      if (status.role !== "leader" || status.progress[id]?.state !== "snapshot")
        this.snapshotSender.close(id);
    }
  }

  /**
   * Whether `rd` hands out a committed membership change. Its commit index is then written and fsynced
   * with the Ready, not held for the next write: the core takes the new configuration at advance(),
   * and a crash that lost the commit would bring this voter back on the old one after the others had
   * counted on the new one. A quorum of the new one may be all that is left, each back on the old
   * configuration, where no one can be elected (docs/decisions/0010-commit-index-rides-along.md).
   */
  private commitsConfChange(rd: Ready): boolean {
    if ((rd.hardState ?? this.unsavedCommit) === null) return false;
    return rd.committedEntries.some((e) => e.type === "conf");
  }

  private onlyCommitMoved(hard: HardState): boolean {
    return hard.term === this.lastHard.term && hard.vote === this.lastHard.vote;
  }

  /**
   * Applies what an earlier Ready deferred, then `entries`: one slice of them (applySliceEnd), the rest
   * in the next turns of the event loop, or all of them at once when `whole`.
   */
  private apply(entries: readonly Entry[], whole = false): void {
    if (this.failure !== null) return;
    if (this.deferredApply.length > 0) {
      const deferred = this.deferredApply;
      this.deferredApply = [];
      for (const entry of entries) deferred.push(entry);
      entries = deferred;
    }
    if (entries.length === 0) return;
    const end = whole ? entries.length : applySliceEnd(entries);
    if (end < entries.length) {
      this.deferredApply = entries.slice(end);
      entries = entries.slice(0, end);
      this.applyRestSoon();
    }
    const started = performance.now();
    const results = this.opts.stateMachine.applyBatch(entries);
    const seconds = (performance.now() - started) / 1000;
    for (const listener of this.applyListeners) listener(seconds, entries.length);
    this.proposals.settle(entries, results);
  }

  /**
   * Resolves once the state machine has applied `index`, or after a heartbeat interval, whichever
   * comes first; never rejects. For a command this follower forwarded: the leader's answer says the
   * command applied at `index`, and the client's next request here (say, with the key that command
   * created) must see it. The leader sends its commit index ahead of the answer (releaseHeldAppend);
   * what this follower then holds back is applied at once. A heartbeat carries the commit index
   * anyway, so a longer wait would buy nothing: the outcome is known, only its local apply is late.
   */
  waitApplied(index: number): Promise<void> {
    if (!this.running || this.failure !== null || this.opts.stateMachine.applied().index >= index) {
      return Promise.resolve();
    }
    const applied = this.applyWaiters.wait(index, this.opts.heartbeatIntervalMs);
    // A failing apply stops the driver, which releases this wait: applyHeld never throws.
    this.applyHeld();
    return applied;
  }

  /**
   * Sends the entry-less append held for the voter `voterName` (see send) now: before the answer to a
   * command it forwarded, so that it learns the command committed without waiting for a heartbeat. By
   * the name the peer network knows it by, not its member ID, which differs once it was replaced.
   */
  releaseHeldAppend(voterName: string): void {
    if (this.failure !== null) return;
    this.heldAppends.release(voterName);
  }

  /** Applies the next slice of what `apply` left over in the next turn, and so on until none is left. */
  private applyRestSoon(): void {
    if (this.applyRestScheduled) return;
    this.applyRestScheduled = true;
    this.timers.setImmediate(() => {
      this.applyRestScheduled = false;
      if (!this.running || this.failure !== null || this.deferredApply.length === 0) return;
      try {
        this.apply([]);
        this.serveReads();
        this.maybeSnapshot();
      } catch (err) {
        this.fail(err);
      }
    });
  }

  /** Applies at once what this follower holds back. */
  private applyHeld(): void {
    if (!this.holding() || this.failure !== null) return;
    try {
      this.apply([]);
      this.serveReads();
    } catch (err) {
      this.fail(err);
    }
  }

  /** Whether this voter, not leading, holds committed entries back. */
  private holding(): boolean {
    return this.followerApply.holding(this.lastRole, this.deferredApply.length);
  }

  private armHeldApply(): void {
    if (this.heldApplyTimer !== undefined || this.deferredApply.length === 0) return;
    this.heldApplyTimer = this.timers.setTimeout(() => {
      this.heldApplyTimer = undefined;
      if (!this.running || this.failure !== null) return;
      // A Ready in progress applies them during its fsync, or holds them again.
      if (this.looping) return this.armHeldApply();
      this.applyHeld();
      this.maybeSnapshot();
    }, this.opts.followerApplyHoldMs);
  }

  private serveReads(): void {
    if (this.reads.noneConfirmed() && this.applyWaiters.isEmpty()) return;
    let applied = this.opts.stateMachine.applied().index;
    // A read or a forwarded answer waits for nothing a follower holds back (FollowerApplyPolicy).
    if (this.holding() && (this.reads.waitsBeyond(applied) || this.applyWaiters.waitsBeyond(applied))) {
      this.apply([]);
      applied = this.opts.stateMachine.applied().index;
    }
    this.reads.settle(applied);
    this.applyWaiters.settle(applied);
  }

  private onSoftState(rd: Ready): void {
    const soft = rd.softState!;
    const newLeader = soft.leader !== this.lastLeader;
    if (soft.leader !== null && newLeader) this.leaderChangesSeen++;
    this.lastLeader = soft.leader;
    const fields = { term: soft.term, role: soft.role, leader: soft.leader };
    if (soft.role !== this.lastRole) {
      this.opts.logger.info(fields, "raft role changed");
      // Held appends of a term this node no longer leads would only be refused.
      if (this.lastRole === "leader") this.heldAppends.clear();
      this.lastRole = soft.role;
    } else if (newLeader) {
      // A follower that stays one sees its leader go and another come, often in a new term.
      this.opts.logger.info(fields, "raft leader changed");
    }
  }

  /**
   * Records a snapshot point when the policy says one is due (the state made durable, the log
   * compacted behind it, nothing copied), or copies the state when the core asked for a snapshot to
   * send while the log stood on a point with no file (docs/decisions/0021-lazy-snapshots.md). A
   * failure is logged and retried after a pause that doubles up to a cap (SnapshotBackoff), not after
   * every Ready. It stops the voter only when the log or the applied state failed under it: the log
   * through the store's failure listener, a failed commit of the applied state (which every later
   * apply would meet) here.
   */
  private maybeSnapshot(): void {
    if (this.snapshotInProgress || this.failure !== null || !this.snapshotBackoff.allows(this.timers.now()))
      return;
    const sm = this.opts.stateMachine;
    const applied = sm.applied().index;
    const copy = this.opts.store.snapshotWanted();
    if (!copy && !this.opts.writer.policy.due(this.opts.store, applied)) return;
    const source = {
      createSnapshotFile: (path: string) => sm.createSnapshot(path),
      durablePosition: () => sm.durablePosition(),
    };
    // The core records a configuration change at advance(), which on a leader follows the apply of
    // its entries (applied during the fsync): the snapshot's configuration waits for it.
    const confAt = async (index: number): Promise<ConfState> => {
      while (this.raft.status().applied < index) {
        if (!this.running || this.failure !== null) throw new StorageClosedError();
        await new Promise<void>((resolve) => this.timers.setTimeout(resolve, 1));
      }
      return this.raft.confStateAt(index);
    };
    this.snapshotInProgress = true;
    this.snapshotting = (
      copy
        ? this.opts.writer.createSnapshot(source, confAt)
        : this.opts.writer.maybeSnapshot(source, confAt, applied)
    )
      .then((meta) => {
        this.snapshotBackoff.succeeded();
        if (meta === null) return;
        const what = copy ? "snapshot copied for a follower" : "snapshot point recorded and log compacted";
        this.opts.logger.info({ index: meta.index, term: meta.term }, what);
      })
      .catch((err: unknown) => {
        // A failure of the state itself has stopped the voter already (onFailure, above).
        if (this.failure !== null) return;
        const retryInMs = this.snapshotBackoff.failed(this.timers.now());
        this.opts.logger.error(
          { err, term: this.lastHard.term, applied, failures: this.snapshotBackoff.failures, retryInMs },
          "taking a snapshot failed; retrying later",
        );
      })
      .finally(() => {
        this.snapshotInProgress = false;
      });
  }

  /**
   * Stops for good: no tick, step, send or apply after this, every waiter fails, and `failed`
   * settles. The first failure wins; later ones are its consequences.
   */
  private fail(err: unknown): void {
    if (this.failure !== null) return;
    const failure = VoterFailedError.from(err);
    this.failure = failure;
    this.timers.clearInterval(this.ticker);
    this.timers.clearTimeout(this.heldApplyTimer);
    this.heldAppends.clear();
    this.inbox.clear();
    void this.snapshotSender.closeAll();
    this.statusAtFailure = this.lastStatus();
    this.opts.logger.fatal(
      {
        err: failure,
        term: this.statusAtFailure.term,
        role: this.statusAtFailure.role,
        commit: this.statusAtFailure.commit,
        applied: this.opts.stateMachine.applied().index,
      },
      "the Raft driver stopped: storage or apply failed",
    );
    const error = new UnknownWriteOutcomeError("this voter failed before the outcome was known", {
      reason: "StorageFailed",
    });
    this.proposals.rejectAll(error);
    this.proposals.detachNotices();
    this.deferredApply = [];
    this.reads.rejectAll(
      new UnavailableError("this voter's storage or apply failed; it must restart", {
        reason: "StorageFailed",
      }),
    );
    this.applyWaiters.releaseAll();
    this.reportFailure(failure);
  }

  /**
   * The core's status as it stops, leading no one any more; from the last hard state when the core,
   * reading its failed log, cannot give one (its last index then as far as known to be committed).
   */
  private lastStatus(): RaftStatus {
    let status: RaftStatus;
    try {
      status = this.raft.status();
    } catch {
      const { term, vote, commit } = this.lastHard;
      status = {
        id: this.opts.id,
        term,
        vote,
        commit,
        applied: this.opts.stateMachine.applied().index,
        role: this.lastRole,
        leader: null,
        lastIndex: commit,
        transferee: null,
        leaderCommit: commit,
        conf: this.raft.confState(),
        progress: {},
      };
    }
    return { ...status, leader: null, transferee: null, progress: {} };
  }
}
