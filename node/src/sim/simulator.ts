import {
  type ConfState,
  type Entry,
  type HardState,
  type MemoryStorage,
  type Message,
  type NodeId,
  ProposalRefusedError,
  RaftNode,
  type RaftOptions,
  type RaftStatus,
  type ReadFailure,
  type ReadState,
  type Ready,
  SeededRandom,
  type Snapshot,
} from "../raft/index.js";
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
import { COMPACTED, type InvariantName, InvariantViolation, SafetyChecker } from "./invariants.js";
import { raiseCommitToApplied } from "./raise-commit.js";
import { type HeldHardState, planReady, type ReadyPlan } from "./ready-plan.js";
import { type DiskWrite, SimDisk } from "./sim-disk.js";
import { type Delivery, type LinkCut, SimNetwork } from "./sim-network.js";
import { encodeCommand, SimStateMachine } from "./sim-state-machine.js";
import { type Counters, emptyCounters, type SimStats } from "./sim-stats.js";
import { StateMachineStore } from "./state-machine-store.js";
import { Trace } from "./trace.js";

export const NODE_IDS: readonly NodeId[] = ["n1", "n2", "n3"];
const CONF: ConfState = { voters: NODE_IDS };

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
  | { readonly kind: "restart"; readonly node: SimNode }
  | { readonly kind: "client" | "fault" }
  | { readonly kind: "heal"; readonly cuts: readonly LinkCut[]; readonly what: string }
  | { readonly kind: "burst-end"; readonly burst: BurstKind };

interface PendingProposal {
  readonly term: number;
  readonly digest: number;
}

interface IssuedRead {
  readonly node: NodeId;
  /** The highest acknowledged write when the read was issued: the read must see it. */
  readonly minIndex: number;
  answered: boolean;
}

/**
 * One simulated server: a durable disk and a state machine that outlive crashes (in part), and
 * volatile state that does not.
 */
interface SimNode {
  readonly id: NodeId;
  readonly disk: SimDisk;
  readonly state: StateMachineStore;
  readonly tickInterval: number;
  core: RaftNode | null;
  /** Bumped on every crash so the timers of an earlier life are ignored. */
  incarnation: number;
  /** The Ready whose write waits for its fsync; the core hands out no other meanwhile. */
  writing: { readonly rd: Ready; readonly plan: ReadyPlan } | null;
  /** What the driver keeps about hard states between Readys (see planReady). */
  held: HeldHardState;
  /** The hard state on disk. */
  durable: HardState;
  /** The commit index last seen in this life, which must never go back. */
  commit: number;
  status: RaftStatus | null;
  /** The latest term whose leadership of this node had its log checked (invariant 3). */
  checkedLeaderTerm: number;
  readonly proposals: Map<number, PendingProposal>;
  waitingReads: { readonly requestId: string; readonly index: number }[];
}

/**
 * Three Raft cores over a simulated network and disks, driven by one seed. A step is one event:
 * a delivery, a tick, an fsync completing, a client operation or a fault. Every invariant is checked
 * on what each step changed, and the same seed always replays the same run.
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
  private readonly nodes: SimNode[];
  private readonly byId = new Map<NodeId, SimNode>();
  private readonly storages: readonly MemoryStorage[];
  private readonly queue = new EventQueue<SimEvent>();
  private readonly checker = new SafetyChecker();
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
    this.network = new SimNetwork(NODE_IDS, new SeededRandom(root.nextUint32()), this.profile.network);
    const p = this.profile;
    const stateLoss = new SeededRandom(root.nextUint32());
    this.nodes = NODE_IDS.map((id) => {
      const skew = this.random.nextInt(2 * p.tickSkew + 1) - p.tickSkew;
      const node: SimNode = {
        id,
        disk: new SimDisk(CONF, new SeededRandom(root.nextUint32()), p.disk),
        state: new StateMachineStore(stateLoss),
        tickInterval: Math.max(2, p.tickInterval + skew),
        core: null,
        incarnation: 0,
        writing: null,
        held: { last: { term: 0, vote: null, commit: 0 }, unsaved: null },
        durable: { term: 0, vote: null, commit: 0 },
        commit: 0,
        status: null,
        checkedLeaderTerm: 0,
        proposals: new Map(),
        waitingReads: [],
      };
      this.byId.set(id, node);
      return node;
    });
    this.storages = this.nodes.map((n) => n.disk.storage);
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
      for (const node of this.nodes) this.start(node);
      this.queue.push(this.between(this.profile.clientGap), { kind: "client" });
      this.queue.push(this.between(this.profile.faultGap), { kind: "fault" });
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
      case "client":
        this.clientOperation();
        return;
      case "fault":
        this.fault();
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

  /** Events of a node's earlier life, and faults and client load after the faulty phase, are skipped. */
  private isStale(ev: SimEvent): boolean {
    switch (ev.kind) {
      case "tick":
      case "sync":
        return ev.node.core === null || ev.incarnation !== ev.node.incarnation;
      case "restart":
        return ev.node.core !== null;
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
    for (const node of this.nodes) node.disk.setFaults({ ...this.profile.disk, stallRate: 0 });
    this.note("-", "phase", "converge: network healed, faults and client load stopped");
    for (const node of this.nodes) {
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
    for (const node of this.nodes)
      this.checker.checkFinal(node.id, node.state.live.applied, node.state.live.digest);
  }

  /** One leader followed by all, everything it holds committed and applied everywhere. */
  private converged(): boolean {
    let leader: SimNode | null = null;
    for (const node of this.nodes) {
      if (node.status === null) return false;
      if (node.status.role === "leader") {
        if (leader !== null) return false;
        leader = node;
      }
    }
    if (leader === null) return false;
    const ls = leader.status!;
    if (ls.commit !== ls.lastIndex) return false;
    for (const node of this.nodes) {
      const s = node.status!;
      if (s.term !== ls.term || s.leader !== leader.id || node.state.live.applied !== ls.lastIndex)
        return false;
    }
    return true;
  }

  private describeNodes(): string {
    const parts = this.nodes.map((n) => {
      const s = n.status;
      if (n.core === null || s === null) return `${n.id} down`;
      const leader = s.leader ?? "-";
      return `${n.id} ${s.role} t${s.term} leader=${leader} commit=${s.commit} last=${s.lastIndex} applied=${n.state.live.applied}`;
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
    node.core = null;
    node.writing = null;
    node.status = null;
    node.incarnation++;
    this.counters.proposalsAbandoned += node.proposals.size;
    node.proposals.clear();
    node.waitingReads = [];
    this.counters.crashes++;
    if (lost !== null) this.counters.lostWrites++;
    const losses: string[] = [];
    if (lost !== null) losses.push(`unsynced ${describeWrite(lost)}`);
    if (undone > 0) losses.push(`${undone} applied batches`);
    this.note(node.id, "fault", losses.length === 0 ? "crash" : `crash, losing ${losses.join(" and ")}`);
    this.queue.push(this.time + this.between(this.profile.downtime), { kind: "restart", node });
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
    const node = this.byId.get(m.to)!;
    if (delivery.cut || node.core === null) {
      this.counters.messagesDropped++;
      this.trace.add(this.step, this.time, m.to, "drop", delivery.cut ? "(link cut)" : "(node down)", m);
      return;
    }
    this.counters.messagesDelivered++;
    if (m.type === "snapshot-chunk") this.counters.snapshotChunks++;
    this.trace.add(this.step, this.time, m.to, "deliver", "", m);
    try {
      node.core.step(m);
    } catch (error) {
      throw coreFailure(node.id, `step(${m.type})`, error);
    }
    this.afterInput(node);
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
    if (s.commit < node.commit) {
      fail("monotonic-progress", `${node.id} commit index went back from ${node.commit} to ${s.commit}`);
    }
    if (s.role === "leader" && s.commit > node.commit) {
      const copies = durableCopies(this.storages, s.commit);
      if (copies <= NODE_IDS.length / 2) {
        fail("leader-completeness", `${node.id} commits ${s.commit}, which only ${copies} disk(s) hold`);
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
      this.checkReady(node, rd);
      const plan = planReady(rd, node.held);
      node.held = plan.held;
      this.sendMessages(node, plan.early);
      if (plan.write !== null) {
        // A crash before the sync loses the leader's copy but not the followers', and may keep the
        // applies made meanwhile but not the commit index this write carries.
        node.writing = { rd, plan };
        const delay = node.disk.write(plan.write);
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

  /** Checks a Ready before any of it reaches the disk: what it appends and who it makes leader. */
  private checkReady(node: SimNode, rd: Ready): void {
    if (rd.hardState !== null) this.checker.observeHardState(node.id, node.durable, rd.hardState);
    const storage = node.disk.storage;
    if (rd.snapshot !== null) {
      const index = rd.snapshot.meta.index;
      const stored = storage.snapshot().meta.index;
      if (index <= stored) {
        fail(
          "core-contract",
          `${node.id} asks to install snapshot ${index} over its stored snapshot ${stored}`,
        );
      }
      const applied = node.state.live.applied;
      if (index < applied) {
        fail("monotonic-progress", `${node.id} installs snapshot ${index} after applying ${applied}`);
      }
    }
    if (rd.entries.length > 0) this.checkEntries(node, rd.entries, rd.snapshot);
    const s = node.status!;
    if (s.role === "leader" && s.term > node.checkedLeaderTerm) {
      node.checkedLeaderTerm = s.term;
      this.checkLeaderLog(node, rd, s);
    }
  }

  private checkEntries(node: SimNode, entries: readonly Entry[], snapshot: Snapshot | null): void {
    const storage = node.disk.storage;
    const first = entries[0]!.index;
    for (let k = 1; k < entries.length; k++) {
      if (entries[k]!.index !== first + k)
        fail("core-contract", `${node.id} appends entries with a gap at ${first + k}`);
    }
    // The entries land after the Ready's snapshot if it has one, else on the stored log.
    const base = snapshot !== null ? snapshot.meta.index : storage.firstIndex() - 1;
    const last = snapshot !== null ? snapshot.meta.index : storage.lastIndex();
    if (first > last + 1)
      fail("core-contract", `${node.id} appends at ${first} after its last index ${last}`);
    // Storage skips entries its snapshot already covers.
    const from = Math.max(0, base + 1 - first);
    if (from >= entries.length) return;
    const start = first + from;
    const prevTerm = snapshot !== null ? snapshot.meta.term : storage.term(start - 1);
    if (snapshot === null) {
      const overlapEnd = Math.min(storage.lastIndex(), first + entries.length - 1);
      for (let i = start; i <= overlapEnd; i++) {
        const old = storage.term(i);
        const replacement = entries[i - first]!.term;
        if (old === replacement) continue;
        if (i <= node.durable.commit) {
          fail(
            "leader-completeness",
            `${node.id} overwrites committed ${i}/t${old} with a term ${replacement} entry (its commit is ${node.durable.commit})`,
          );
        }
        break;
      }
    }
    this.checker.observeAppend(node.id, entries, from, prevTerm);
  }

  /** The log a new leader has: its disk, overlaid with the snapshot and entries of this Ready. */
  private checkLeaderLog(node: SimNode, rd: Ready, s: RaftStatus): void {
    const storage = node.disk.storage;
    const entries = rd.entries;
    const first = entries.length > 0 ? entries[0]!.index : Number.POSITIVE_INFINITY;
    const snapshot = rd.snapshot;
    const termAt = (i: number): number | undefined => {
      if (i >= first) return entries[i - first]?.term;
      if (snapshot !== null) {
        if (i === snapshot.meta.index) return snapshot.meta.term;
        return i < snapshot.meta.index ? COMPACTED : undefined;
      }
      if (i < storage.firstIndex() - 1) return COMPACTED;
      if (i > storage.lastIndex()) return undefined;
      return storage.term(i);
    };
    this.checker.checkLeaderLog(node.id, s.term, s.lastIndex, termAt);
  }

  private sendMessages(node: SimNode, messages: readonly Message[]): void {
    for (const m of messages) {
      if (m.from !== node.id || m.to === node.id || !this.byId.has(m.to)) {
        fail("core-contract", `${node.id} sends a ${m.type} from ${m.from} to ${m.to}`);
      }
      this.counters.messagesSent++;
      const outcome = this.network.send(m, this.time);
      if (outcome === "dropped" || outcome === "cut") {
        this.counters.messagesDropped++;
        this.trace.add(this.step, this.time, node.id, "drop", outcome === "cut" ? "(link cut)" : "(lost)", m);
      } else if (outcome === "duplicated") {
        this.counters.messagesDuplicated++;
      }
    }
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
      sm = SimStateMachine.restore(snapshot);
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
      this.checker.observeApply(node.id, e, digest, sm.digest, termBound);
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
   * Takes a local snapshot every so often and compacts, so lagging nodes need InstallSnapshot. Disks
   * are never wiped: a voter that forgets its vote or log can break safety without a membership
   * change, so it is nodes left behind by crashes and partitions that exercise InstallSnapshot.
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
    storage.createSnapshot(sm.applied, CONF, sm.serialize());
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
    const live = this.liveNodes();
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
    const live = this.liveNodes();
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
    const others = NODE_IDS.filter((id) => id !== leader.id);
    const to = others[this.random.nextInt(others.length)]!;
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
    ]);
    switch (choice) {
      case 0:
        this.crashSomeNode();
        return;
      case 1: {
        const id = this.faultTarget(this.nodes).id;
        this.partitioned(this.network.isolate(id), `isolate ${id}`);
        return;
      }
      case 2: {
        const from = NODE_IDS[this.random.nextInt(NODE_IDS.length)]!;
        const others = NODE_IDS.filter((id) => id !== from);
        const to = others[this.random.nextInt(others.length)]!;
        this.partitioned(this.network.cut(from, to), `cut ${from} -> ${to} (one way)`);
        return;
      }
      default:
        this.startBurst((["drop", "duplicate", "delay", "disk"] as const)[choice - 3]!);
    }
  }

  private crashSomeNode(): void {
    const live = this.liveNodes();
    if (live.length === 0 || NODE_IDS.length - live.length >= this.profile.maxCrashed) return;
    this.crash(this.faultTarget(live));
  }

  /** Faults aimed at the leader are the ones that leave divergent logs behind. */
  private faultTarget(candidates: readonly SimNode[]): SimNode {
    const leader = this.knownLeader();
    return leader !== null && this.random.chance(this.profile.leaderFaultBias)
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
    for (const node of this.nodes) {
      node.disk.setFaults({
        ...disk,
        stallRate: stall ? b.diskStallRate : disk.stallRate,
        stallDelay: stall ? b.diskStallDelay : disk.stallDelay,
      });
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private liveNodes(): SimNode[] {
    return this.nodes.filter((n) => n.core !== null);
  }

  /** The live node that believes itself leader in the highest term, if any. */
  private knownLeader(): SimNode | null {
    let best: SimNode | null = null;
    for (const node of this.nodes) {
      const s = node.status;
      if (node.core === null || s === null || s.role !== "leader") continue;
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

  private note(node: string, kind: "fault" | "client" | "role" | "apply" | "phase", text: string): void {
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

function describeWrite(write: DiskWrite): string {
  const parts: string[] = [];
  if (write.snapshot !== null) parts.push(`snapshot ${write.snapshot.meta.index}`);
  const first = write.entries[0];
  const last = write.entries[write.entries.length - 1];
  if (first !== undefined && last !== undefined) parts.push(`entries ${first.index}..${last.index}`);
  if (write.hardState !== null) {
    const hs = write.hardState;
    parts.push(`hard state t${hs.term}/v=${hs.vote ?? "-"}/c${hs.commit}`);
  }
  return parts.join(", ");
}
