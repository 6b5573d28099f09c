import {
  type ConfChange,
  type Entry,
  type Message,
  type NodeId,
  ProposalRefusedError,
  RaftNode,
  type RaftOptions,
  type RaftStatus,
  type Ready,
  SeededRandom,
  type Snapshot,
  type SnapshotChunkMessage,
} from "../raft/index.js";
import { ConvergenceWatch, convergenceProgress } from "./convergence-watch.js";
import { entryDigest } from "./digest.js";
import { EventQueue } from "./event-queue.js";
import { FaultInjector } from "./fault-injector.js";
import {
  DEFAULT_PROFILE,
  type FaultProfile,
  type RaftTuning,
  type Range,
  tuningFor,
} from "./fault-profile.js";
import {
  checkAppliedOnDisk,
  checkApplyOrder,
  checkCommitProgress,
  checkConverged,
  checkIdleReadys,
  checkMatchProgress,
  checkSend,
  checkSnapshotInstalled,
  checkSnapshotSent,
} from "./invariant-checks.js";
import { InvariantViolation, SafetyChecker } from "./invariants.js";
import { MembershipChecker } from "./membership-invariants.js";
import { describeChange, isRemovalOf, MembershipOperator } from "./membership-operator.js";
import { type HeldCopy, INITIAL_VOTERS, NodeRegistry, type SimNode } from "./node-registry.js";
import { raiseCommitToApplied } from "./raise-commit.js";
import { between } from "./random-choices.js";
import { checkReady } from "./ready-checks.js";
import { planReady, type ReadyPlan } from "./ready-plan.js";
import type { SimEvent } from "./sim-events.js";
import { coreFailure, describeError, fail, SimulationFailure } from "./sim-failure.js";
import { type Delivery, SimNetwork } from "./sim-network.js";
import { SimStateMachine } from "./sim-state-machine.js";
import { type Counters, emptyCounters, type SimStats } from "./sim-stats.js";
import { SimWorkload } from "./sim-workload.js";
import { Trace, type TraceKind } from "./trace.js";
import { checkVouched } from "./vouched-sends.js";

/** The final phase's whole budget, in windows without progress (SimOptions.convergenceSteps). */
const CONVERGENCE_CAP_WINDOWS = 20;

// Importers take the failure type from here, with the run that produces it.
export { SimulationFailure } from "./sim-failure.js";

export interface SimOptions {
  /** Steps of faulty operation before the final convergence phase. */
  readonly steps?: number;
  /**
   * Steps the final phase may go without progress toward convergence before it is a liveness failure
   * (default 10,000); it may take twenty times that in all (ConvergenceWatch).
   */
  readonly convergenceSteps?: number;
  readonly profile?: FaultProfile;
  /** Builds each core; a test passes a deliberately broken subclass here. */
  readonly createNode?: (options: RaftOptions) => RaftNode;
  /** Events kept for the failure report; `Infinity` keeps the whole run. */
  readonly traceCapacity?: number;
}

export interface SimResult {
  readonly seed: number;
  readonly steps: number;
  readonly ok: boolean;
  readonly violation?: SimulationFailure;
  readonly stats: SimStats;
  readonly trace: Trace;
}

/**
 * Raft cores over a simulated network and disks, driven by one seed: three bootstrapped voters, then
 * whichever nodes the membership operator adds. A step is one event: a delivery, a tick, an fsync
 * completing, a client operation, a fault or a membership change. Every invariant is checked on what
 * each step changed, and the same seed always replays the same run.
 *
 * The loop here orders the events and steps the nodes; what clients ask is SimWorkload's, which faults
 * strike is FaultInjector's, and the checks made outside a Ready are in invariant-checks.ts.
 */
export class Simulator {
  private readonly profile: FaultProfile;
  private readonly tuning: RaftTuning;
  private readonly faultySteps: number;
  private readonly convergenceSteps: number;
  private readonly createNode: (options: RaftOptions) => RaftNode;
  private readonly random: SeededRandom;
  private readonly coreSeeds: SeededRandom;
  private readonly network: SimNetwork;
  private readonly nodes: NodeRegistry;
  /** Null when the profile makes no membership changes. */
  private readonly operator: MembershipOperator | null;
  private readonly queue = new EventQueue<SimEvent>();
  private readonly checker = new SafetyChecker();
  private readonly membership = new MembershipChecker();
  private readonly workload: SimWorkload;
  private readonly faults: FaultInjector;
  private readonly counters: Counters;
  readonly trace: Trace;
  private time = 0;
  private step = 0;
  private converging = false;

  constructor(
    readonly seed: number,
    options: SimOptions = {},
  ) {
    this.profile = options.profile ?? DEFAULT_PROFILE;
    this.faultySteps = options.steps ?? 1000;
    // A window without progress, not a budget for the whole phase (ConvergenceWatch): far longer than
    // a converging cluster goes between gains, even when go-back-N replication (as etcd's) catches a
    // follower up through shuffled pipelines of small appends, a few entries per pipeline.
    this.convergenceSteps = options.convergenceSteps ?? 10_000;
    this.createNode = options.createNode ?? ((o) => new RaftNode(o));
    this.trace = new Trace(options.traceCapacity ?? 200);
    this.counters = emptyCounters();
    // Separate streams per concern, all drawn from the one seed, so e.g. a change in how often the
    // network drops does not shift every later crash.
    const root = new SeededRandom(seed);
    this.tuning = tuningFor(this.profile, new SeededRandom(root.nextUint32()));
    this.random = new SeededRandom(root.nextUint32());
    this.coreSeeds = new SeededRandom(root.nextUint32());
    this.network = new SimNetwork([], new SeededRandom(root.nextUint32()), this.profile.network);
    const p = this.profile;
    const diskSeeds = new SeededRandom(root.nextUint32());
    const clock = new SeededRandom(root.nextUint32());
    const stateLoss = new SeededRandom(root.nextUint32());
    const operatorRandom = new SeededRandom(root.nextUint32());
    // Drawn last from the root, and only per new disk: the streams above are those of every run before
    // lazy snapshots existed, so a run whose disks all draw eager replays exactly as it did then.
    const lazyRandom = new SeededRandom(root.nextUint32());
    this.nodes = new NodeRegistry({
      diskSeeds,
      clock,
      stateLoss,
      tickInterval: p.tickInterval,
      tickSkew: p.tickSkew,
      disk: p.disk,
      lazySnapshots: { chance: p.lazySnapshots, random: lazyRandom },
    });
    this.operator =
      p.membership === null
        ? null
        : new MembershipOperator(p.membership, operatorRandom, (id) => this.nodes.appliedConf(id));
    // Both draw from the loop's own stream: the order of all those draws together is what a seed replays.
    this.workload = new SimWorkload({
      random: this.random,
      profile: this.profile,
      checker: this.checker,
      counters: this.counters,
      // A paused node takes no client request.
      running: () => this.nodes.running().filter((n) => n.pausedUntil === 0),
      knownLeader: () => {
        const leader = this.knownLeader();
        return leader?.pausedUntil === 0 ? leader : null;
      },
      note: (node, kind, text) => this.note(node, kind, text),
      afterInput: (node) => this.afterInput(node),
    });
    this.faults = new FaultInjector({
      random: this.random,
      profile: this.profile,
      nodes: this.nodes,
      network: this.network,
      operator: this.operator,
      counters: this.counters,
      now: () => this.time,
      schedule: (at, event) => this.queue.push(at, event),
      note: (node, kind, text) => this.note(node, kind, text),
      knownLeader: () => this.knownLeader(),
      stop: (node) => this.stop(node),
    });
    for (let k = 0; k < INITIAL_VOTERS.length; k++) this.addNode(INITIAL_VOTERS);
  }

  get steps(): number {
    return this.step;
  }

  get stats(): SimStats {
    let unavailable = 0;
    for (const node of this.nodes.all) unavailable += node.disk.storage.unavailableAnswers;
    return {
      ...this.counters,
      steps: this.step,
      time: this.time,
      committed: this.checker.committedIndex,
      snapshotsUnavailable: unavailable,
    };
  }

  /** Runs the faulty phase and then the convergence phase; throws `SimulationFailure`. */
  run(): void {
    try {
      const tuning = Object.entries(this.tuning).map(([key, value]) => `${key}=${value}`);
      this.note("-", "phase", `profile ${this.profile.name}: ${tuning.join(" ")}`);
      for (const node of this.nodes.all) this.start(node);
      this.queue.push(this.between(this.profile.clientGap), { kind: "client" });
      this.queue.push(this.between(this.profile.faultGap), { kind: "fault" });
      if (this.profile.membership !== null)
        this.queue.push(this.between(this.profile.membership.gap), { kind: "operator" });
      while (this.step < this.faultySteps) this.processNext();
      this.converge();
    } catch (error) {
      if (!(error instanceof InvariantViolation)) throw error;
      throw SimulationFailure.of(this.seed, error, this.step, this.time, this.trace.format());
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Event loop

  private processNext(): void {
    if (this.network.nextTime() <= this.queue.peekTime()) {
      const delivery = this.network.next()!;
      this.begin(delivery.at);
      this.deliver(delivery);
      return;
    }
    const item = this.queue.pop();
    if (item === undefined) throw new Error("the simulation ran out of events");
    const ev = item.value;
    if (this.isStale(ev)) return;
    if (
      (ev.kind === "tick" || ev.kind === "sync" || ev.kind === "snapshot-copy") &&
      ev.node.pausedUntil > 0
    ) {
      // A paused process does nothing: what was due runs once it resumes (an fsync it started completes,
      // but the process learns of it only then).
      this.queue.push(ev.node.pausedUntil, ev);
      return;
    }
    this.begin(item.time);
    switch (ev.kind) {
      case "resume":
        this.resume(ev.node);
        return;
      case "tick":
        this.tick(ev.node);
        return;
      case "sync":
        this.sync(ev.node);
        return;
      case "snapshot-copy":
        this.copySnapshot(ev.node);
        return;
      case "restart":
        this.counters.restarts++;
        this.start(ev.node);
        return;
      case "shutdown":
        this.shutDown(ev.node);
        return;
      case "client":
        this.queue.push(this.time + this.between(this.profile.clientGap), { kind: "client" });
        this.workload.operate();
        return;
      case "fault":
        this.queue.push(this.time + this.between(this.profile.faultGap), { kind: "fault" });
        this.faults.inject();
        return;
      case "operator":
        this.operate();
        return;
      case "heal":
        this.faults.heal(ev.cuts, ev.what);
        return;
      case "burst-end":
        this.faults.endBurst(ev.burst);
        return;
    }
  }

  /**
   * Events of a node's earlier life or of a retired node, and faults and client load after the faulty
   * phase, are skipped. The operator goes on while converging, to finish its repairs.
   */
  private isStale(ev: SimEvent): boolean {
    switch (ev.kind) {
      case "tick":
      case "sync":
      case "snapshot-copy":
      case "resume":
        return ev.node.core === null || ev.incarnation !== ev.node.incarnation;
      case "restart":
        return ev.node.core !== null || ev.node.retired;
      case "shutdown":
        return ev.node.retired;
      case "operator":
        return false;
      default:
        return this.converging;
    }
  }

  private begin(time: number): void {
    this.time = time;
    this.step++;
  }

  private converge(): void {
    this.converging = true;
    this.faults.stopAll();
    this.note("-", "phase", "converge: network healed, faults and client load stopped");
    for (const node of this.nodes.active()) {
      if (node.core === null) {
        this.counters.restarts++;
        this.start(node);
      }
    }
    const start = this.step;
    const watch = new ConvergenceWatch(
      start,
      this.convergenceSteps,
      CONVERGENCE_CAP_WINDOWS * this.convergenceSteps,
    );
    while (!this.converged()) {
      const stuck = watch.check(this.step, convergenceProgress(this.knownLeader(), this.nodes.running()));
      if (stuck !== undefined) throw new InvariantViolation("liveness", `${stuck}: ${this.describeNodes()}`);
      this.processNext();
    }
    this.counters.convergenceSteps = this.step - start;
    checkConverged(this.checker, this.nodes, this.knownLeader()!.status!.conf);
  }

  /**
   * One leader followed by every member of its configuration, everything it holds committed and
   * applied everywhere, and the operator's repairs done. Nodes outside the configuration (removed, or
   * never added) are not waited for.
   */
  private converged(): boolean {
    let leader: SimNode | null = null;
    for (const node of this.nodes.running()) {
      if (node.status === null) return false;
      if (node.status.role === "leader") {
        if (leader !== null) return false;
        leader = node;
      }
    }
    if (leader === null) return false;
    const ls = leader.status!;
    if (ls.commit !== ls.lastIndex) return false;
    if (this.operator !== null && !this.operator.settled(ls.conf)) return false;
    for (const id of [...ls.conf.voters, ...(ls.conf.learners ?? [])]) {
      const node = this.nodes.get(id);
      const s = node?.status;
      if (node === undefined || node.core === null || s === null || s === undefined) return false;
      if (s.term !== ls.term || s.leader !== leader.id || node.state.live.applied !== ls.lastIndex)
        return false;
    }
    return true;
  }

  private describeNodes(): string {
    const parts = this.nodes.all.map((n) => {
      const s = n.status;
      if (n.wiped) return `${n.id} wiped`;
      if (n.retired) return `${n.id} removed`;
      if (n.core === null || s === null) return `${n.id} down`;
      const leader = s.leader ?? "-";
      const conf = `${s.conf.voters.join(",")}${(s.conf.learners ?? []).map((id) => `,~${id}`).join("")}`;
      return `${n.id} ${s.role} t${s.term} leader=${leader} commit=${s.commit} last=${s.lastIndex} applied=${n.state.live.applied} conf=${conf}`;
    });
    return `${parts.join("; ")}; highest acknowledged write ${this.checker.maxAcked}`;
  }

  // ---------------------------------------------------------------------------------------------
  // Node lifecycle

  /** Boots a node from what its disk and state machine kept, as after a power loss. */
  private start(node: SimNode): void {
    const storage = node.disk.storage;
    const snapshot = storage.snapshotMeta();
    if (node.state.live.applied < snapshot.index) this.reinstallSnapshot(node);
    const sm = node.state.live;
    this.checker.observeRestore(node.id, sm.applied, sm.term, sm.digest);
    const raised = raiseCommitToApplied(storage, sm.applied);
    if (raised) this.counters.commitsRaised++;
    const { hardState } = storage.initialState();
    node.durable = hardState;
    node.held = { last: hardState, unsaved: null };
    node.commit = hardState.commit;
    node.status = null;
    try {
      node.core = this.createNode({
        ...this.tuning,
        id: node.id,
        storage,
        random: new SeededRandom(this.coreSeeds.nextUint32()),
        applied: sm.applied,
      });
    } catch (error) {
      throw coreFailure(node.id, "constructor", error);
    }
    this.note(
      node.id,
      "fault",
      `start: term ${hardState.term} vote ${hardState.vote ?? "-"} commit ${hardState.commit}` +
        `${raised ? " (raised to the applied index)" : ""} applied ${sm.applied} ` +
        `snapshot ${snapshot.index}${storage.onPoint ? " (point)" : ""} log ${storage.firstIndex()}..${storage.lastIndex()}`,
    );
    this.scheduleTick(node, 1 + this.random.nextInt(node.tickInterval));
    this.afterInput(node);
  }

  /**
   * As the driver does at start (voter.ts): a crash between persisting a received snapshot and
   * installing it leaves the state machine behind the log's snapshot, which is installed again. Behind
   * a snapshot point instead, the state lost what it had made durable before the log was compacted.
   */
  private reinstallSnapshot(node: SimNode): void {
    const storage = node.disk.storage;
    const meta = storage.snapshotMeta();
    const behind = node.state.live.applied;
    if (storage.onPoint) {
      fail(
        "state-machine-safety",
        `${node.id} restarts with its state at ${behind}, behind its snapshot point ${meta.index}`,
      );
    }
    let sm: SimStateMachine;
    try {
      sm = SimStateMachine.restore(meta, storage.snapshotData());
    } catch (error) {
      fail("state-machine-safety", `${node.id} holds an unreadable snapshot: ${describeError(error)}`);
    }
    node.state.synced(sm);
    this.note(
      node.id,
      "fault",
      `start: the state at ${behind} is behind snapshot ${meta.index}: installed again`,
    );
  }

  /** Loses everything volatile: the core, a write waiting for its fsync, pending client work. */
  private stop(node: SimNode): void {
    node.core = null;
    node.writing = null;
    // A copy under way or not yet recorded is a temporary file that the next start deletes.
    node.copy = null;
    node.status = null;
    node.incarnation++;
    // What was received of a snapshot sits in a temporary file that the next start deletes.
    node.inbox.clear();
    this.counters.proposalsAbandoned += node.proposals.size;
    node.proposals.clear();
    node.waitingReads = [];
    node.pausedUntil = 0;
    this.counters.messagesDropped += node.backlog.length;
    node.backlog = [];
  }

  /** A paused node runs again: what reached it meanwhile is handled now, in the order it came. */
  private resume(node: SimNode): void {
    node.pausedUntil = 0;
    const backlog = node.backlog;
    node.backlog = [];
    this.note(node.id, "fault", `resumed, ${backlog.length} messages waiting`);
    for (const delivery of backlog) {
      if (node.core === null) break;
      this.deliver(delivery);
    }
  }

  /** Adds a node with a new ID (see NodeRegistry.create); it starts when the caller says. */
  private addNode(bootstrap: readonly NodeId[] | null): SimNode {
    const node = this.nodes.create(bootstrap);
    if (node.disk.storage.lazy) this.counters.lazyDisks++;
    this.network.addNode(node.id);
    return node;
  }

  /** A node that applied its own removal shuts down for good, as an etcd member does. */
  private shutDown(node: SimNode): void {
    if (node.core !== null) this.stop(node);
    node.retired = true;
    this.note(node.id, "member", "shut down: removed from the cluster");
  }

  private scheduleTick(node: SimNode, delay: number): void {
    this.queue.push(this.time + delay, { kind: "tick", node, incarnation: node.incarnation });
  }

  private tick(node: SimNode): void {
    this.trace.add(this.step, this.time, node.id, "tick");
    try {
      node.core!.tick();
    } catch (error) {
      throw coreFailure(node.id, "tick", error);
    }
    // Per-tick jitter on top of the node's own skewed period keeps clocks drifting apart.
    this.scheduleTick(node, node.tickInterval - 1 + this.random.nextInt(3));
    this.afterInput(node);
  }

  private deliver(delivery: Delivery): void {
    const m = delivery.message;
    const node = this.nodes.get(m.to)!;
    if (delivery.cut || node.core === null) {
      this.counters.messagesDropped++;
      this.trace.add(this.step, this.time, m.to, "drop", delivery.cut ? "(link cut)" : "(node down)", m);
      return;
    }
    if (node.pausedUntil > 0) {
      node.backlog.push({ ...delivery, cut: false });
      return;
    }
    this.counters.messagesDelivered++;
    if (m.type === "snapshot-chunk") this.counters.snapshotChunks++;
    this.trace.add(this.step, this.time, m.to, "deliver", "", m);
    if (m.type === "vote-response") this.membership.observeGrant(m);
    const before = node.status!;
    const refused = node.inbox.refusedSnapshots;
    const unavailable = node.disk.storage.unavailableAnswers;
    try {
      node.inbox.step(node.core, m);
    } catch (error) {
      throw coreFailure(node.id, `step(${m.type})`, error);
    }
    if (node.inbox.refusedSnapshots > refused) {
      this.counters.snapshotsRefused++;
      this.note(
        node.id,
        "apply",
        `refused snapshot ${m.type === "snapshot-chunk" ? m.meta.index : "?"}: checksum`,
      );
    }
    this.observeStatus(node);
    if (node.disk.storage.unavailableAnswers > unavailable) this.snapshotUnavailable(node, m, before);
    if (m.type === "vote") this.membership.observeVoteRequest(node.id, m, before, node.status!);
    this.pump(node);
  }

  /** After anything reached a core: look at its new state, then take the Readys it has. */
  private afterInput(node: SimNode): void {
    this.observeStatus(node);
    this.pump(node);
  }

  private observeStatus(node: SimNode): void {
    const s = node.core!.status();
    const before = node.status;
    if (s.role === "leader" && this.checker.observeLeader(node.id, s.term)) this.counters.leaders++;
    if (before === null || before.role !== s.role || before.term !== s.term) {
      this.note(node.id, "role", `${s.role} t${s.term} (commit ${s.commit}, last ${s.lastIndex})`);
    }
    this.membership.observeStatus(node.id, before, s);
    checkCommitProgress(node, s, (id) => this.nodes.diskOf(id));
    checkMatchProgress(node, before, s);
    if (s.term > this.counters.maxTerm) this.counters.maxTerm = s.term;
    node.commit = s.commit;
    node.status = s;
  }

  // ---------------------------------------------------------------------------------------------
  // Ready handling, as the production driver does it (see planReady): send a leader's replication
  // traffic, write and apply what is durable already during the fsync, then send the rest, apply the
  // rest and advance. The next Ready comes only once the write is durable, as in production.

  private pump(node: SimNode): void {
    let idle = 0;
    for (;;) {
      const core = node.core;
      if (core === null || node.writing !== null || !core.hasReady()) return;
      let rd: Ready;
      try {
        rd = core.ready();
      } catch (error) {
        throw coreFailure(node.id, "ready", error);
      }
      if (rd.committedEntries.length === 0) checkIdleReadys(node, ++idle);
      this.trace.add(this.step, this.time, node.id, "ready", "", null, rd);
      checkReady(node, rd, this.checker, this.membership);
      const plan = planReady(rd, node.held);
      node.held = plan.held;
      this.sendMessages(node, plan.early);
      if (plan.write !== null) {
        // A crash before the sync loses the leader's copy but not the followers', and may keep the
        // applies made meanwhile but not the commit index this write carries.
        node.writing = { rd, plan };
        // The received snapshot's file is sealed before the write that switches the log to it.
        const snapshotData = rd.snapshot === null ? null : node.inbox.take(rd.snapshot).bytes();
        const delay = node.disk.write({ ...plan.write, snapshotData });
        this.queue.push(this.time + delay, { kind: "sync", node, incarnation: node.incarnation });
        this.apply(node, plan.applyDuringWrite);
        return;
      }
      this.finishReady(node, rd, plan);
    }
  }

  private sync(node: SimNode): void {
    const { rd, plan } = node.writing!;
    node.writing = null;
    try {
      node.disk.sync();
    } catch (error) {
      throw coreFailure(node.id, "Ready (storage refused it)", error);
    }
    const hard = plan.write!.hardState;
    if (hard !== null) node.durable = hard;
    this.counters.fsyncs++;
    this.trace.add(this.step, this.time, node.id, "sync");
    this.finishReady(node, rd, plan);
    this.pump(node);
  }

  private sendMessages(node: SimNode, messages: readonly Message[]): void {
    const durable = node.disk.storage;
    for (const sent of messages) {
      checkSend(node, sent, (id) => this.nodes.get(id) !== undefined);
      checkVouched(node.id, sent, durable.initialState().hardState, durable.lastIndex());
      if (sent.type === "snapshot-chunk") checkSnapshotSent(node, sent);
      this.counters.messagesSent++;
      const m = sent.type === "snapshot-chunk" ? this.withChunkBytes(node, sent) : sent;
      if (m === null) {
        this.counters.messagesDropped++;
        this.trace.add(this.step, this.time, node.id, "drop", "(snapshot superseded)", sent);
        continue;
      }
      const outcome = this.network.send(m, this.time);
      if (outcome === "dropped" || outcome === "cut") {
        this.counters.messagesDropped++;
        this.trace.add(this.step, this.time, node.id, "drop", outcome === "cut" ? "(link cut)" : "(lost)", m);
      } else if (outcome === "duplicated") {
        this.counters.messagesDuplicated++;
      }
    }
  }

  /**
   * A chunk as the driver sends it: its bytes read from the snapshot on disk, null when a newer one
   * replaced it (the core then moves to the newer one). Now and then a byte is flipped on the way,
   * which the receiver's checksum must catch.
   */
  private withChunkBytes(node: SimNode, m: SnapshotChunkMessage): SnapshotChunkMessage | null {
    const filled = node.disk.storage.fillChunk(m);
    if (filled === null || filled.data === null || filled.length === 0) return filled;
    if (!this.random.chance(this.profile.chunkCorruptRate)) return filled;
    const data = filled.data.slice();
    const at = this.random.nextInt(data.byteLength);
    data[at] = data[at]! ^ (1 + this.random.nextInt(255));
    this.counters.snapshotChunksCorrupted++;
    return { ...filled, data };
  }

  private finishReady(node: SimNode, rd: Ready, plan: ReadyPlan): void {
    this.sendMessages(node, plan.late);
    if (rd.snapshot !== null) this.installSnapshot(node, rd.snapshot);
    this.apply(node, plan.applyAfterWrite);
    for (const rs of rd.readStates) this.workload.readConfirmed(node, rs);
    for (const rf of rd.readFailures) this.workload.readFailed(node, rf);
    try {
      node.core!.advance();
    } catch (error) {
      throw coreFailure(node.id, "advance", error);
    }
    // A leader's commit can move in advance(): its own copy just became durable.
    this.observeStatus(node);
    this.maybeSnapshot(node);
  }

  private installSnapshot(node: SimNode, snapshot: Snapshot): void {
    checkSnapshotInstalled(node, snapshot, this.nodes);
    let sm: SimStateMachine;
    try {
      sm = SimStateMachine.restore(snapshot.meta, node.disk.storage.snapshotData());
    } catch (error) {
      fail("state-machine-safety", `${node.id} received an unreadable snapshot: ${describeError(error)}`);
    }
    const { index, term } = snapshot.meta;
    this.checker.observeRestore(node.id, index, term, sm.digest);
    this.membership.checkSnapshotConf(node.id, snapshot.meta);
    node.state.synced(sm);
    this.counters.snapshotsInstalled++;
    this.note(node.id, "apply", `installed snapshot ${index}/t${term}`);
    this.workload.snapshotInstalled(node, index);
  }

  /** Applies one batch, which the state machine commits as one transaction. */
  private apply(node: SimNode, entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    // A node learns a commit index only from a leader of its current term or an earlier one.
    const termBound = node.status!.term;
    const sm = node.state.live;
    for (const e of entries) {
      checkApplyOrder(node, e);
      const digest = entryDigest(e);
      sm.apply(e, digest);
      const firstApplied = e.index > this.checker.committedIndex;
      this.checker.observeApply(node.id, e, digest, sm.digest, termBound);
      if (firstApplied) this.operator?.observeCommitted(e);
      if (firstApplied && e.type === "conf") this.membership.observeCommittedChange(e);
      if (isRemovalOf(e, node.id)) {
        this.queue.push(this.time + this.between(this.profile.downtime), { kind: "shutdown", node });
      }
      this.workload.applied(node, e, digest);
    }
    node.state.committed();
    this.workload.serveReads(node);
  }

  /**
   * Takes a local snapshot every so often and compacts, so lagging nodes and nodes that join late need
   * InstallSnapshot. The snapshot carries the configuration as of its index. On a lazy disk it is a
   * point, and a copy is started instead when the core asked for a snapshot on one; as in the
   * production driver, nothing else is taken while a copy is under way. A copy held for the core to
   * advance is recorded here, after advance().
   */
  private maybeSnapshot(node: SimNode): void {
    const storage = node.disk.storage;
    const sm = node.state.live;
    if (node.copy !== null && node.copy !== "copying") this.recordCopy(node, node.copy);
    if (node.copy !== null) return;
    if (storage.snapshotWanted()) {
      this.startCopy(node);
      return;
    }
    if (sm.applied - storage.snapshotMeta().index < this.profile.snapshotEvery) return;
    checkAppliedOnDisk(node);
    storage.takeSnapshot(sm.applied, node.core!.confStateAt(sm.applied), () => sm.serialize());
    this.membership.checkSnapshotConf(node.id, storage.snapshotMeta());
    // Production fsyncs the state database before it records a snapshot of it.
    node.state.synced(sm);
    const compactTo = sm.applied - this.random.nextInt(this.profile.keepAfterSnapshot + 1);
    storage.compact(compactTo);
    this.counters.snapshotsTaken++;
    const what = storage.lazy ? "snapshot point" : "snapshot";
    this.note(node.id, "apply", `${what} at ${sm.applied}, log compacted to ${compactTo}`);
  }

  /**
   * A leader stepping `m` asked for a snapshot to send and was answered null: it sends nothing. On a
   * heartbeat answer or a chunk's, a transfer to `m.from` under way was being rewound: its file may be
   * gone (the point superseded it), so the leader drops it and probes. (On an append answer the
   * follower may have completed one transfer and need the next; that is not counted.)
   */
  private snapshotUnavailable(node: SimNode, m: Message, before: RaftStatus): void {
    const from = m.from;
    const rewound = m.type === "heartbeat-response" || m.type === "snapshot-chunk-response";
    const was = before.progress[from]?.state;
    const abandoned = rewound && was === "snapshot" && node.status!.progress[from]?.state === "probe";
    if (abandoned) this.counters.snapshotTransfersAbandoned++;
    const point = node.disk.storage.snapshotMeta().index;
    const what = abandoned ? `, transfer to ${from} abandoned` : "";
    this.note(node.id, "apply", `no snapshot to send: on point ${point}${what}`);
  }

  /** The core was answered null on a point: the state machine is copied, which takes a while. */
  private startCopy(node: SimNode): void {
    node.copy = "copying";
    const delay = this.between(this.profile.snapshotCopyDelay);
    this.queue.push(this.time + delay, { kind: "snapshot-copy", node, incarnation: node.incarnation });
    this.note(
      node.id,
      "apply",
      `snapshot wanted on point ${node.disk.storage.snapshotMeta().index}: copying`,
    );
  }

  /**
   * The copy is made: of the state machine as it is now, at the index it has applied (at or beyond the
   * point), as the production driver copies it. Its configuration is the core's at that index
   * (confStateAt), which the core knows only once it advanced past the index: a leader applies during
   * its fsync, before advance(), so a copy made then is held until the Ready is done (maybeSnapshot).
   * The state machine is not made durable by the copy: a crash may take it back behind it.
   */
  private copySnapshot(node: SimNode): void {
    const sm = node.state.live;
    if (!node.disk.storage.snapshotWanted()) {
      node.copy = null;
      this.note(node.id, "apply", "snapshot copy dropped: no longer on a point");
      return;
    }
    checkAppliedOnDisk(node);
    const copy: HeldCopy = { index: sm.applied, data: sm.serialize() };
    if (node.core!.status().applied >= copy.index) {
      this.recordCopy(node, copy);
      return;
    }
    node.copy = copy;
    this.note(node.id, "apply", `snapshot copied at ${copy.index}, held until the core advances to it`);
  }

  /** Records a copy as the latest snapshot, unless a snapshot received meanwhile made it needless. */
  private recordCopy(node: SimNode, copy: HeldCopy): void {
    node.copy = null;
    const storage = node.disk.storage;
    if (!storage.snapshotWanted()) {
      this.note(node.id, "apply", `snapshot copy at ${copy.index} dropped: no longer on a point`);
      return;
    }
    const core = node.core!;
    if (core.status().applied < copy.index)
      throw new Error(`${node.id} records a copy at ${copy.index} before its core advanced to it`);
    const point = storage.snapshotMeta().index;
    const recorded = storage.materialize(copy.index, core.confStateAt(copy.index), copy.data);
    this.membership.checkSnapshotConf(node.id, recorded.meta);
    this.counters.snapshotsCopied++;
    this.note(node.id, "apply", `snapshot copy recorded at ${copy.index} (point ${point})`);
  }

  // ---------------------------------------------------------------------------------------------
  // Membership

  /**
   * The operator looks at the cluster through the leader and proposes its next change, if any; a
   * refused change is looked at again next time. A change the leader's own configuration allows is
   * never refused as invalid: the operator reads that configuration from the leader's status.
   */
  private operate(): void {
    const operator = this.operator!;
    this.queue.push(this.time + this.between(this.profile.membership!.gap), { kind: "operator" });
    const leader = this.knownLeader();
    // A paused leader takes no request; the operator looks again later.
    if (leader === null || leader.pausedUntil > 0) return;
    const { conf, commit, progress } = leader.status!;
    const action = operator.next({ id: leader.id, conf, commit, progress }, this.converging);
    if (action === null) return;
    let change: ConfChange;
    if (action.kind === "join") {
      const node = this.addNode(null);
      operator.started(node.id);
      this.counters.joins++;
      this.note(node.id, "member", "a fresh node starts, to join as a learner");
      this.start(node);
      change = { type: "add-learner", node: node.id };
    } else {
      change = action.change;
    }
    this.counters.confChanges++;
    let at: { index: number; term: number };
    try {
      at = leader.core!.proposeConfChange(change);
    } catch (error) {
      if (!(error instanceof ProposalRefusedError) || error.reason === "InvalidConfChange")
        throw coreFailure(leader.id, `proposeConfChange(${describeChange(change)})`, error);
      this.counters.confChangesRefused++;
      this.note(leader.id, "member", `${describeChange(change)} refused: ${error.reason}`);
      return;
    }
    operator.accepted(change, at.index);
    this.note(leader.id, "member", `${describeChange(change)} -> ${at.index}/t${at.term}`);
    this.afterInput(leader);
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  /** The live node that believes itself leader in the highest term, if any. */
  private knownLeader(): SimNode | null {
    let best: SimNode | null = null;
    for (const node of this.nodes.running()) {
      const s = node.status;
      if (s === null || s.role !== "leader") continue;
      if (best === null || s.term > best.status!.term) best = node;
    }
    return best;
  }

  private between(range: Range): number {
    return between(this.random, range);
  }

  private note(node: string, kind: TraceKind, text: string): void {
    this.trace.add(this.step, this.time, node, kind, text);
  }
}

/** Runs one seed to completion; a violation is returned, not thrown. */
export function runSeed(seed: number, options: SimOptions = {}): SimResult {
  const sim = new Simulator(seed, options);
  let violation: SimulationFailure | undefined;
  try {
    sim.run();
  } catch (error) {
    if (!(error instanceof SimulationFailure)) throw error;
    violation = error;
  }
  return {
    seed,
    steps: sim.steps,
    ok: violation === undefined,
    violation,
    stats: sim.stats,
    trace: sim.trace,
  };
}
