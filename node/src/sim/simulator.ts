import {
  type ConfChange,
  type Entry,
  type Message,
  type NodeId,
  ProposalRefusedError,
  RaftNode,
  type RaftOptions,
  type ReadFailure,
  type ReadState,
  type Ready,
  SeededRandom,
  type Snapshot,
  type SnapshotChunkMessage,
} from "../raft/index.js";
import { fillChunkFromMemory } from "../raft/memory-snapshot-sink.js";
import { commandDigest, entryDigest } from "./digest.js";
import { durableCopies } from "./durable-quorum.js";
import { EventQueue } from "./event-queue.js";
import {
  DEFAULT_PROFILE,
  type FaultProfile,
  type RaftTuning,
  type Range,
  tuningFor,
} from "./fault-profile.js";
import { type InvariantName, InvariantViolation, SafetyChecker } from "./invariants.js";
import { MembershipChecker } from "./membership-invariants.js";
import { describeChange, isRemovalOf, MembershipOperator } from "./membership-operator.js";
import { INITIAL_VOTERS, NodeRegistry, type PendingProposal, type SimNode } from "./node-registry.js";
import { raiseCommitToApplied } from "./raise-commit.js";
import { checkReady } from "./ready-checks.js";
import { planReady, type ReadyPlan } from "./ready-plan.js";
import { describeWrite } from "./sim-disk.js";
import { type Delivery, type LinkCut, SimNetwork } from "./sim-network.js";
import { encodeCommand, SimStateMachine } from "./sim-state-machine.js";
import { type Counters, emptyCounters, type SimStats } from "./sim-stats.js";
import { Trace } from "./trace.js";

/**
 * Readys without committed entries a core may hand out in one step. Paging a long committed backlog
 * takes as many Readys as it needs; anything else repeating this often is a loop, not work.
 */
const MAX_IDLE_READYS_PER_STEP = 64;

export interface SimOptions {
  /** Steps of faulty operation before the final convergence phase. */
  readonly steps?: number;
  /** Steps the final phase may take to converge before it is a liveness failure. */
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

/** A broken invariant, with everything needed to reproduce and read it. */
export class SimulationFailure extends Error {
  constructor(
    readonly seed: number,
    readonly invariant: InvariantName,
    readonly detail: string,
    readonly step: number,
    readonly time: number,
    readonly trace: string,
  ) {
    super(`seed ${seed}: ${invariant} violated at step ${step} (t=${time}): ${detail}\n${trace}`);
    this.name = "SimulationFailure";
  }
}

type BurstKind = "drop" | "duplicate" | "delay" | "disk";

type SimEvent =
  | { readonly kind: "tick" | "sync"; readonly node: SimNode; readonly incarnation: number }
  | { readonly kind: "restart" | "shutdown"; readonly node: SimNode }
  | { readonly kind: "client" | "fault" | "operator" }
  | { readonly kind: "heal"; readonly cuts: readonly LinkCut[]; readonly what: string }
  | { readonly kind: "burst-end"; readonly burst: BurstKind };

interface IssuedRead {
  readonly node: NodeId;
  /** The highest acknowledged write when the read was issued: the read must see it. */
  readonly minIndex: number;
  answered: boolean;
}

/**
 * Raft cores over a simulated network and disks, driven by one seed: three bootstrapped voters, then
 * whichever nodes the membership operator adds. A step is one event: a delivery, a tick, an fsync
 * completing, a client operation, a fault or a membership change. Every invariant is checked on what
 * each step changed, and the same seed always replays the same run.
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
  private readonly issuedReads = new Map<string, IssuedRead>();
  private readonly bursts = new Map<BurstKind, number>();
  private readonly counters: Counters;
  readonly trace: Trace;
  private time = 0;
  private step = 0;
  private converging = false;
  private nextCommandId = 1;
  private nextReadId = 1;

  constructor(
    readonly seed: number,
    options: SimOptions = {},
  ) {
    this.profile = options.profile ?? DEFAULT_PROFILE;
    this.faultySteps = options.steps ?? 1000;
    // Generous: the network still reorders while converging, and go-back-N replication (as etcd's)
    // can take a few thousand steps to settle when a whole pipeline of small appends is shuffled.
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
    this.nodes = new NodeRegistry({
      diskSeeds: new SeededRandom(root.nextUint32()),
      clock: new SeededRandom(root.nextUint32()),
      stateLoss: new SeededRandom(root.nextUint32()),
      tickInterval: p.tickInterval,
      tickSkew: p.tickSkew,
      disk: p.disk,
    });
    const operatorRandom = new SeededRandom(root.nextUint32());
    this.operator =
      p.membership === null
        ? null
        : new MembershipOperator(p.membership, operatorRandom, (id) => this.nodes.appliedConf(id));
    for (let k = 0; k < INITIAL_VOTERS.length; k++) this.addNode(INITIAL_VOTERS);
  }

  get steps(): number {
    return this.step;
  }

  get stats(): SimStats {
    return { ...this.counters, steps: this.step, time: this.time, committed: this.checker.committedIndex };
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
      throw new SimulationFailure(
        this.seed,
        error.invariant,
        error.detail,
        this.step,
        this.time,
        this.trace.format(),
      );
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
    this.begin(item.time);
    switch (ev.kind) {
      case "tick":
        this.tick(ev.node);
        return;
      case "sync":
        this.sync(ev.node);
        return;
      case "restart":
        this.counters.restarts++;
        this.start(ev.node);
        return;
      case "shutdown":
        this.shutDown(ev.node);
        return;
      case "client":
        this.clientOperation();
        return;
      case "fault":
        this.fault();
        return;
      case "operator":
        this.operate();
        return;
      case "heal":
        this.network.restore(ev.cuts);
        this.note("-", "fault", `heal ${ev.what}`);
        return;
      case "burst-end":
        this.endBurst(ev.burst);
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
    this.bursts.clear();
    this.network.heal();
    this.network.setFaults({ ...this.profile.network, dropRate: 0, duplicateRate: 0, spikeRate: 0 });
    this.nodes.setDiskFaults({ ...this.profile.disk, stallRate: 0 });
    this.note("-", "phase", "converge: network healed, faults and client load stopped");
    for (const node of this.nodes.active()) {
      if (node.core === null) {
        this.counters.restarts++;
        this.start(node);
      }
    }
    const start = this.step;
    while (!this.converged()) {
      if (this.step - start >= this.convergenceSteps) {
        throw new InvariantViolation(
          "liveness",
          `no convergence within ${this.convergenceSteps} steps after healing: ${this.describeNodes()}`,
        );
      }
      this.processNext();
    }
    this.counters.convergenceSteps = this.step - start;
    // Converged on a log that lacks an acknowledged write is a lost write, not a liveness failure.
    const { conf } = this.knownLeader()!.status!;
    for (const id of [...conf.voters, ...(conf.learners ?? [])]) {
      const sm = this.nodes.get(id)!.state.live;
      this.checker.checkFinal(id, sm.applied, sm.digest);
    }
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
    const snapshot = storage.snapshot();
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
        `snapshot ${snapshot.meta.index} log ${storage.firstIndex()}..${storage.lastIndex()}`,
    );
    this.scheduleTick(node, 1 + this.random.nextInt(node.tickInterval));
    this.afterInput(node);
  }

  private crash(node: SimNode): void {
    const lost = node.disk.crash();
    const undone = node.state.crash();
    this.stop(node);
    this.counters.crashes++;
    if (lost !== null) this.counters.lostWrites++;
    const losses: string[] = [];
    if (lost !== null) losses.push(`unsynced ${describeWrite(lost)}`);
    if (undone > 0) losses.push(`${undone} applied batches`);
    this.note(node.id, "fault", losses.length === 0 ? "crash" : `crash, losing ${losses.join(" and ")}`);
    this.queue.push(this.time + this.between(this.profile.downtime), { kind: "restart", node });
  }

  /** Loses everything volatile: the core, a write waiting for its fsync, pending client work. */
  private stop(node: SimNode): void {
    node.core = null;
    node.writing = null;
    node.status = null;
    node.incarnation++;
    // What was received of a snapshot sits in a temporary file that the next start deletes.
    node.inbox.clear();
    this.counters.proposalsAbandoned += node.proposals.size;
    node.proposals.clear();
    node.waitingReads = [];
  }

  /** Adds a node with a new ID (see NodeRegistry.create); it starts when the caller says. */
  private addNode(bootstrap: readonly NodeId[] | null): SimNode {
    const node = this.nodes.create(bootstrap);
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
    this.counters.messagesDelivered++;
    if (m.type === "snapshot-chunk") this.counters.snapshotChunks++;
    this.trace.add(this.step, this.time, m.to, "deliver", "", m);
    if (m.type === "vote-response") this.membership.observeGrant(m);
    const before = node.status!;
    const refused = node.inbox.refusedSnapshots;
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
    if (s.commit < node.commit) {
      fail("monotonic-progress", `${node.id} commit index went back from ${node.commit} to ${s.commit}`);
    }
    if (s.role === "leader" && s.commit > node.commit) {
      const { voters } = s.conf;
      const copies = durableCopies(voters, (id) => this.nodes.diskOf(id), s.commit);
      if (copies <= voters.length / 2) {
        fail(
          "leader-completeness",
          `${node.id} commits ${s.commit}, which only ${copies} disk(s) hold of its ${voters.length} voters [${voters.join(", ")}]`,
        );
      }
    }
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
      if (rd.committedEntries.length === 0 && ++idle > MAX_IDLE_READYS_PER_STEP) {
        fail(
          "core-contract",
          `${node.id} keeps handing out Readys: ${idle} without entries to apply in one step`,
        );
      }
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
    for (const sent of messages) {
      if (sent.from !== node.id || sent.to === node.id || this.nodes.get(sent.to) === undefined) {
        fail("core-contract", `${node.id} sends a ${sent.type} from ${sent.from} to ${sent.to}`);
      }
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
    const filled = fillChunkFromMemory(node.disk.storage, m);
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
    for (const rs of rd.readStates) this.readConfirmed(node, rs);
    for (const rf of rd.readFailures) this.readFailed(node, rf);
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
    let sm: SimStateMachine;
    try {
      sm = SimStateMachine.restore(snapshot.meta, node.disk.storage.snapshotData());
    } catch (error) {
      fail("state-machine-safety", `${node.id} received an unreadable snapshot: ${describeError(error)}`);
    }
    const { index, term } = snapshot.meta;
    this.checker.observeRestore(node.id, index, term, sm.digest);
    node.state.synced(sm);
    this.counters.snapshotsInstalled++;
    this.note(node.id, "apply", `installed snapshot ${index}/t${term}`);
    for (const [at, p] of node.proposals) {
      if (at > index) continue;
      node.proposals.delete(at);
      if (this.checker.isCommitted(at, p.term, p.digest)) this.acknowledge(node, at, p);
      else this.counters.proposalsLost++;
    }
    this.serveReads(node);
  }

  /** Applies one batch, which the state machine commits as one transaction. */
  private apply(node: SimNode, entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    // A node learns a commit index only from a leader of its current term or an earlier one.
    const termBound = node.status!.term;
    const sm = node.state.live;
    for (const e of entries) {
      if (e.index !== sm.applied + 1) {
        fail("monotonic-progress", `${node.id} applies ${e.index} right after ${sm.applied}`);
      }
      if (e.index > node.commit)
        fail("core-contract", `${node.id} applies ${e.index} beyond its commit ${node.commit}`);
      const digest = entryDigest(e);
      sm.apply(e, digest);
      const firstApplied = e.index > this.checker.committedIndex;
      this.checker.observeApply(node.id, e, digest, sm.digest, termBound);
      if (firstApplied) this.operator?.observeCommitted(e);
      if (isRemovalOf(e, node.id)) {
        this.queue.push(this.time + this.between(this.profile.downtime), { kind: "shutdown", node });
      }
      const p = node.proposals.get(e.index);
      if (p === undefined) continue;
      node.proposals.delete(e.index);
      if (p.term !== e.term) {
        this.counters.proposalsLost++;
      } else if (p.digest !== digest) {
        fail(
          "acknowledged-write",
          `${node.id} applied ${e.index}/t${e.term}, which is not what it was asked to propose`,
        );
      } else {
        this.acknowledge(node, e.index, p);
      }
    }
    node.state.committed();
    this.serveReads(node);
  }

  private acknowledge(node: SimNode, index: number, p: PendingProposal): void {
    this.checker.observeAck(node.id, index, p.term, p.digest);
    this.counters.acked++;
    this.note(node.id, "client", `ack ${index}/t${p.term}`);
  }

  /**
   * Takes a local snapshot every so often and compacts, so lagging nodes and nodes that join late need
   * InstallSnapshot. The snapshot carries the configuration as of its index.
   */
  private maybeSnapshot(node: SimNode): void {
    const storage = node.disk.storage;
    const sm = node.state.live;
    if (sm.applied - storage.snapshot().meta.index < this.profile.snapshotEvery) return;
    if (sm.applied > storage.lastIndex() || storage.term(sm.applied) !== sm.term) {
      fail(
        "state-machine-safety",
        `${node.id} no longer holds its applied entry ${sm.applied}/t${sm.term} on disk`,
      );
    }
    storage.createSnapshot(sm.applied, node.core!.confStateAt(sm.applied), sm.serialize());
    // Production fsyncs the state database before it records a snapshot of it.
    node.state.synced(sm);
    const compactTo = sm.applied - this.random.nextInt(this.profile.keepAfterSnapshot + 1);
    storage.compact(compactTo);
    this.counters.snapshotsTaken++;
    this.note(node.id, "apply", `snapshot at ${sm.applied}, log compacted to ${compactTo}`);
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  private readConfirmed(node: SimNode, rs: ReadState): void {
    const issued = this.answerRead(node, rs.requestId);
    this.checker.observeReadState(node.id, rs.requestId, rs.index, issued.minIndex);
    this.counters.readsConfirmed++;
    if (node.state.live.applied >= rs.index) this.counters.readsServed++;
    else node.waitingReads.push({ requestId: rs.requestId, index: rs.index });
  }

  private readFailed(node: SimNode, rf: ReadFailure): void {
    this.answerRead(node, rf.requestId);
    this.counters.readsFailed++;
  }

  /** Every read is answered once, by the node it was issued at. */
  private answerRead(node: SimNode, requestId: string): IssuedRead {
    const issued = this.issuedReads.get(requestId);
    if (issued === undefined || issued.node !== node.id) {
      fail("core-contract", `${node.id} answers read ${requestId}, which it never issued`);
    }
    if (issued.answered) fail("core-contract", `${node.id} answers read ${requestId} twice`);
    issued.answered = true;
    return issued;
  }

  private serveReads(node: SimNode): void {
    if (node.waitingReads.length === 0) return;
    const applied = node.state.live.applied;
    const still = node.waitingReads.filter((r) => r.index > applied);
    this.counters.readsServed += node.waitingReads.length - still.length;
    node.waitingReads = still;
  }

  // ---------------------------------------------------------------------------------------------
  // Client load

  private clientOperation(): void {
    this.queue.push(this.time + this.between(this.profile.clientGap), { kind: "client" });
    const mix = this.profile.clientMix;
    switch (this.weighted([mix.propose, mix.proposeBatch, mix.read, mix.transfer])) {
      case 0:
        this.propose(1);
        return;
      case 1:
        this.propose(2 + this.random.nextInt(3));
        return;
      case 2:
        this.read();
        return;
      default:
        this.transfer();
    }
  }

  private propose(count: number): void {
    const live = this.nodes.running();
    if (live.length === 0) return;
    // Clients with stale routing keep writing to deposed leaders too: that is how divergent tails form.
    const leaders = live.filter((n) => n.status?.role === "leader");
    const node =
      leaders.length > 0 && this.random.chance(this.profile.leaderBias)
        ? this.pick(leaders)
        : this.pick(live);
    const data: Uint8Array[] = [];
    for (let k = 0; k < count; k++) {
      const padding = this.random.nextInt(this.profile.maxPadding + 1);
      data.push(
        encodeCommand(this.nextCommandId++, this.random.nextInt(256), this.random.nextUint32(), padding),
      );
    }
    this.counters.proposals++;
    let first: number;
    let term: number;
    try {
      if (count === 1) {
        const r = node.core!.propose(data[0]!);
        first = r.index;
        term = r.term;
      } else {
        const r = node.core!.proposeBatch(data);
        first = r.firstIndex;
        term = r.term;
      }
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(node.id, "propose", error);
      this.counters.proposalsRefused++;
      this.note(node.id, "client", `propose x${count} refused: ${error.reason}`);
      return;
    }
    for (let k = 0; k < count; k++) node.proposals.set(first + k, { term, digest: commandDigest(data[k]!) });
    const span = count === 1 ? `${first}` : `${first}..${first + count - 1}`;
    this.note(node.id, "client", `propose x${count} -> ${span}/t${term}`);
    this.afterInput(node);
  }

  private read(): void {
    const live = this.nodes.running();
    if (live.length === 0) return;
    const node = this.pick(live);
    const requestId = `r${this.nextReadId++}`;
    this.counters.reads++;
    try {
      node.core!.readIndex(requestId);
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(node.id, "readIndex", error);
      this.counters.readsRefused++;
      this.note(node.id, "client", `read ${requestId} refused: ${error.reason}`);
      return;
    }
    const minIndex = this.checker.maxAcked;
    this.issuedReads.set(requestId, { node: node.id, minIndex, answered: false });
    this.note(node.id, "client", `read ${requestId} (must see ${minIndex})`);
    this.afterInput(node);
  }

  private transfer(): void {
    const leader = this.knownLeader();
    if (leader === null) return;
    const others = leader.status!.conf.voters.filter((id) => id !== leader.id);
    if (others.length === 0) return;
    const to = this.pick(others);
    this.counters.transfers++;
    try {
      leader.core!.transferLeadership(to);
    } catch (error) {
      if (!(error instanceof ProposalRefusedError)) throw coreFailure(leader.id, "transferLeadership", error);
      this.counters.transfersRefused++;
      this.note(leader.id, "client", `transfer to ${to} refused: ${error.reason}`);
      return;
    }
    this.note(leader.id, "client", `transfer leadership to ${to}`);
    this.afterInput(leader);
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
    if (leader === null) return;
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
  // Faults

  private fault(): void {
    this.queue.push(this.time + this.between(this.profile.faultGap), { kind: "fault" });
    const mix = this.profile.faultMix;
    const choice = this.weighted([
      mix.crash,
      mix.isolate,
      mix.oneWayCut,
      mix.dropBurst,
      mix.duplicateBurst,
      mix.delayBurst,
      mix.diskStall,
      mix.wipe,
    ]);
    switch (choice) {
      case 0:
        this.crashSomeNode();
        return;
      case 1: {
        const id = this.faultTarget(this.nodes.active()).id;
        this.partitioned(this.network.isolate(id), `isolate ${id}`);
        return;
      }
      case 2: {
        const ids = this.nodes.active().map((n) => n.id);
        if (ids.length < 2) return;
        const from = this.pick(ids);
        const to = this.pick(ids.filter((id) => id !== from));
        this.partitioned(this.network.cut(from, to), `cut ${from} -> ${to} (one way)`);
        return;
      }
      case 7:
        this.wipeSomeNode();
        return;
      default:
        this.startBurst((["drop", "duplicate", "delay", "disk"] as const)[choice - 3]!);
    }
  }

  private crashSomeNode(): void {
    const live = this.nodes.running();
    const down = this.nodes.active().length - live.length;
    if (live.length === 0 || down >= this.profile.maxCrashed) return;
    this.crash(this.faultTarget(live));
  }

  /**
   * A node loses its disk, and with it its log, its vote and its state machine. It never comes back
   * under its ID: one that forgot its vote or its log could break safety as a voter. The operator
   * removes it and has a fresh node take its place. Only a disk whose loss leaves a quorum of every
   * configuration in play is lost, or nothing could ever commit the removal.
   */
  private wipeSomeNode(): void {
    const operator = this.operator;
    if (operator === null) return;
    const candidates = this.nodes.active().filter((n) => operator.mayWipe(n.id));
    if (candidates.length === 0) return;
    const node = this.faultTarget(candidates);
    if (node.core !== null) {
      node.disk.crash();
      this.stop(node);
    }
    node.wiped = true;
    node.retired = true;
    operator.wiped(node.id);
    this.counters.wipes++;
    this.note(node.id, "fault", "wipe: disk lost, the node leaves the cluster for good");
  }

  /** Faults aimed at the leader are the ones that leave divergent logs behind. */
  private faultTarget(candidates: readonly SimNode[]): SimNode {
    const leader = this.knownLeader();
    return leader !== null && candidates.includes(leader) && this.random.chance(this.profile.leaderFaultBias)
      ? leader
      : this.pick(candidates);
  }

  private partitioned(cuts: readonly LinkCut[], what: string): void {
    this.counters.partitions++;
    this.note("-", "fault", what);
    this.queue.push(this.time + this.between(this.profile.faultDuration), { kind: "heal", cuts, what });
  }

  private startBurst(burst: BurstKind): void {
    this.bursts.set(burst, (this.bursts.get(burst) ?? 0) + 1);
    this.counters.bursts++;
    this.applyFaultLevels();
    this.note("-", "fault", `${burst} burst begins`);
    this.queue.push(this.time + this.between(this.profile.faultDuration), { kind: "burst-end", burst });
  }

  private endBurst(burst: BurstKind): void {
    const active = (this.bursts.get(burst) ?? 0) - 1;
    if (active > 0) this.bursts.set(burst, active);
    else this.bursts.delete(burst);
    this.applyFaultLevels();
    this.note("-", "fault", `${burst} burst ends`);
  }

  private applyFaultLevels(): void {
    const calm = this.profile.network;
    const b = this.profile.bursts;
    const delay = this.bursts.has("delay");
    this.network.setFaults({
      ...calm,
      dropRate: this.bursts.has("drop") ? b.dropRate : calm.dropRate,
      duplicateRate: this.bursts.has("duplicate") ? b.duplicateRate : calm.duplicateRate,
      spikeRate: delay ? b.spikeRate : calm.spikeRate,
      spikeDelay: delay ? b.spikeDelay : calm.spikeDelay,
    });
    const stall = this.bursts.has("disk");
    const disk = this.profile.disk;
    this.nodes.setDiskFaults({
      ...disk,
      stallRate: stall ? b.diskStallRate : disk.stallRate,
      stallDelay: stall ? b.diskStallDelay : disk.stallDelay,
    });
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

  private pick<T>(items: readonly T[]): T {
    return items[this.random.nextInt(items.length)]!;
  }

  private between(range: Range): number {
    return range[0] + this.random.nextInt(range[1] - range[0] + 1);
  }

  private weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.random.nextFloat() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }

  private note(
    node: string,
    kind: "fault" | "client" | "member" | "role" | "apply" | "phase",
    text: string,
  ): void {
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

function fail(invariant: InvariantName, detail: string): never {
  throw new InvariantViolation(invariant, detail);
}

/** A core that throws where it should not has broken its contract; its own invariant errors included. */
function coreFailure(node: NodeId, call: string, error: unknown): InvariantViolation {
  if (error instanceof InvariantViolation) return error;
  return new InvariantViolation("core-contract", `${node}.${call} threw ${describeError(error)}`);
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
