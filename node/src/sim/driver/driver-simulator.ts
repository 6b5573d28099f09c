import type { RaftOptions } from "../../raft/raft-config.js";
import type { RaftStatus } from "../../raft/raft-node.js";
import { RaftNode } from "../../raft/raft-node.js";
import { SeededRandom } from "../../raft/seeded-random.js";
import type { HardState, Message, NodeId, Ready } from "../../raft/types.js";
import type { StoreOp } from "../../storage/durable-log-store.js";
import type { LogStore } from "../../storage/log-store.js";
import type { ForwardTransport } from "../../voter/command-router.js";
import type { DurableLog } from "../durable-quorum.js";
import type { Range } from "../fault-profile.js";
import { checkCommitDurable } from "../invariant-checks.js";
import { InvariantViolation, SafetyChecker } from "../invariants.js";
import { termsWithReady } from "../leader-log-view.js";
import { changesAfter, MembershipChecker } from "../membership-invariants.js";
import { between } from "../random-choices.js";
import { describeError, SimulationFailure } from "../sim-failure.js";
import { type Delivery, SimNetwork } from "../sim-network.js";
import { Trace } from "../trace.js";
import { checkVouched } from "../vouched-sends.js";
import { type CommandCounts, DriverCommandClients } from "./driver-command-clients.js";
import { DriverFaults, emptyFaultCounts, type FaultCounts, NETWORK } from "./driver-faults.js";
import { DriverMembership } from "./driver-membership.js";
import { DriverNode, type DriverTuning, type NodeWatch } from "./driver-node.js";
import { DRIVER_PROFILE, type DriverProfile } from "./driver-profiles.js";
import { DriverWorkload, PROPOSAL_DEADLINE_MS, type WorkloadCounts } from "./driver-workload.js";
import { SimLogDisk } from "./sim-log-disk.js";
import { SimRequestNetwork } from "./sim-peer-requests.js";
import { SimStateDisk } from "./sim-state-disk.js";
import { TimerOwner, VirtualClock } from "./virtual-clock.js";

const VOTERS: readonly NodeId[] = ["n1", "n2", "n3"];
/** How far a learner may trail the leader and be promoted, when new members ask to join: a few entries. */
const JOIN_PROMOTE_LAG_ENTRIES = 3;

/** The disk of a voter the run does not know: it holds nothing. */
const EMPTY_LOG: DurableLog = {
  snapshotMeta: () => ({ index: 0, term: 0, conf: { voters: [] } }),
  lastIndex: () => 0,
  term: () => 0,
};

export interface DriverSimOptions {
  /** Simulated milliseconds of faults and client load before the run must converge (default 3,000). */
  readonly faultyMs?: number;
  /** Simulated milliseconds the healed cluster has to converge before it is a liveness failure. */
  readonly convergenceMs?: number;
  /** Events kept for the failure report. */
  readonly traceCapacity?: number;
  /** Builds each driver's core; a test passes a deliberately broken one. */
  readonly createCore?: (options: RaftOptions) => RaftNode;
  /** What the run's load and faults lean toward (default DRIVER_PROFILE). */
  readonly profile?: DriverProfile;
  /** Wraps each voter's peer requests as its command router sees them; a test passes a broken one. */
  readonly forwards?: (transport: ForwardTransport) => ForwardTransport;
}

export interface DriverSimStats extends WorkloadCounts, CommandCounts, FaultCounts {
  events: number;
  time: number;
  committed: number;
  leaders: number;
  maxTerm: number;
  joins: number;
  confChanges: number;
  /** New incarnations of lost members promoted to voter. */
  rejoins: number;
  delivered: number;
  /** Messages for a member that lost its disk, delivered to the new incarnation of its name. */
  deliveredToNewIncarnation: number;
  dropped: number;
  /** State machines replaced by a snapshot: received from a leader, or reinstalled at start. */
  snapshotsInstalled: number;
  /** Of those, reinstalled at start: the process died between the snapshot's write and its install. */
  snapshotsReinstalled: number;
  convergenceMs: number;
}

export interface DriverSimResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly violation?: SimulationFailure;
  readonly stats: DriverSimStats;
  readonly trace: Trace;
}

/**
 * Three voters each running the production RaftDriver and DurableLogWriter, with the voter's start-up
 * recovery, over simulated log and state disks, the simulated network and one virtual clock, driven
 * by one seed. Where the core simulator (simulator.ts) checks a copy of the driver's Ready handling,
 * this runs the driver itself: its deferred and held applies, applies during the fsync, slices, held
 * appends, streamed snapshots and lazy snapshot copies, and its read and proposal waiters.
 *
 * An event is a timer of some process (a tick, a deferred turn, an fsync completing), a delivery, a
 * client operation or a fault; after each, every promise continuation it released runs before the
 * next, so a seed replays the same run. Faults (driver-faults.ts): crashes (the process killed, or
 * the machine's power lost, some right after the log took a snapshot), shutdowns, disk errors, lost
 * disks, pauses, isolated nodes and bursts of loss, duplication and delay; membership changes
 * (driver-membership.ts). Clients call the driver directly (driver-workload.ts) and send commands
 * through each voter's command path, forwarded to the leader over the peer network's requests
 * (driver-command-clients.ts). Checks: Raft's safety properties, the membership invariants and the
 * commands' outcomes as the run goes, convergence once the faults stop, and then that every call a
 * voter took was answered and released its admission.
 */
export class DriverSimulator {
  private readonly clock = new VirtualClock();
  private readonly sim = new TimerOwner("sim", 1);
  private readonly random: SeededRandom;
  private readonly network: SimNetwork;
  private readonly checker = new SafetyChecker();
  private readonly membershipChecker = new MembershipChecker();
  private readonly nodes: DriverNode[] = [];
  /** Seeds each new node's state disk. */
  private readonly stateSeeds: SeededRandom;
  private readonly byId = new Map<NodeId, DriverNode>();
  private readonly membership: DriverMembership;
  private readonly workload: DriverWorkload;
  private readonly commandClients: DriverCommandClients;
  private readonly requests: SimRequestNetwork;
  private readonly tuning: DriverTuning;
  private readonly faultyMs: number;
  private readonly convergenceMs: number;
  /** The time between two faults, chosen once per run. */
  private readonly faultGap: Range;
  private readonly faults: DriverFaults;
  private readonly createCore: (options: RaftOptions) => RaftNode;
  private readonly profile: DriverProfile;
  private readonly forwards: (transport: ForwardTransport) => ForwardTransport;
  readonly trace: Trace;
  private readonly backlog = new Map<NodeId, Delivery[]>();
  private readonly lastHard = new Map<NodeId, HardState>();
  private readonly lastCommit = new Map<NodeId, number>();
  /** Per node, its core's status as last observed in this life. */
  private readonly lastStatus = new Map<NodeId, RaftStatus>();
  /** Per node, the latest term whose leadership of it had its log checked. */
  private readonly leaderLogChecked = new Map<NodeId, number>();
  private violationSeen: unknown = null;
  private converging = false;
  private events = 0;
  readonly stats: DriverSimStats;

  constructor(
    readonly seed: number,
    options: DriverSimOptions = {},
  ) {
    this.faultyMs = options.faultyMs ?? 3000;
    this.convergenceMs = options.convergenceMs ?? 20_000;
    this.trace = new Trace(options.traceCapacity ?? 300);
    this.profile = options.profile ?? DRIVER_PROFILE;
    this.forwards = options.forwards ?? ((transport) => transport);
    const createCore = options.createCore ?? ((o) => new RaftNode(o));
    const core = this.profile.core;
    this.createCore = (o) => createCore({ ...o, ...core });
    const root = new SeededRandom(seed);
    this.random = new SeededRandom(root.nextUint32());
    this.network = new SimNetwork([], new SeededRandom(root.nextUint32()), NETWORK);
    const tune = new SeededRandom(root.nextUint32());
    const pickOf = <T>(values: readonly T[]): T => values[tune.nextInt(values.length)]!;
    const heartbeat = pickOf([10, 20, 30]);
    const electionTimeoutMs = heartbeat * pickOf([3, 5, 10]);
    this.tuning = {
      heartbeatIntervalMs: heartbeat,
      electionTimeoutMs,
      followerApplyHoldMs: pickOf([1, 5, 10, 50]),
      maxUncommittedBytes: pickOf([512, 4096, 1 << 20]),
      snapshotChunkBytes: pickOf([16, 64, 1000]),
      snapshotEntries: pickOf([8, 20, 1000]),
      retainEntries: pickOf([0, 2, 5]),
      fsyncDelay: [1, pickOf([2, 4, 10])],
      commands: {
        deadlineMs: PROPOSAL_DEADLINE_MS,
        electionTimeoutMs,
        unitCommands: pickOf([1, 4, 256]),
        dataBytesWithControl: pickOf([100, 1 << 20]),
      },
    };
    // Dense faults test recovery from recovery; sparse ones let the load build longer logs between.
    this.faultGap = pickOf<Range>([
      [20, 100],
      [100, 400],
    ]);
    this.faults = new DriverFaults(
      {
        random: this.random,
        network: this.network,
        running: () => this.nodes.filter((n) => n.running && !n.retired),
        now: () => this.clock.now,
        schedule: (delay, work) => this.schedule(delay, work),
        note: (node, text) => this.note(node, text),
        start: (node) => this.start(node),
        pause: (node, until) => this.pause(node, until),
        violation: (error) => this.violation(error),
        wipe: (node) => this.membership.wipe(node),
        unanswered: (node) => this.workload.unanswered(node),
        held: (node) => this.commandClients.held([node]),
      },
      this.faultGap,
      this.profile,
    );
    this.workload = new DriverWorkload({
      random: this.random,
      checker: this.checker,
      serving: () =>
        this.nodes.filter(
          (n) => n.driver !== null && n.owner !== null && n.owner.pausedUntil <= this.clock.now,
        ),
      note: (node, text) => this.note(node, text),
      after: (delay, work) => this.schedule(delay, work),
      violation: (error) => this.violation(error),
    });
    this.commandClients = new DriverCommandClients({
      random: this.random,
      serving: () =>
        this.nodes.filter(
          (n) => n.commands !== null && n.owner !== null && n.owner.pausedUntil <= this.clock.now,
        ),
      note: (node, text) => this.note(node, text),
      track: (node, what, answer) => this.workload.track(node, what, answer),
      violation: (error) => this.violation(error),
    });
    this.requests = new SimRequestNetwork({
      random: new SeededRandom(root.nextUint32()),
      now: () => this.clock.now,
      at: (at, work) => this.clock.at(at, this.sim, work),
      endpoint: (name) => this.byId.get(this.membership.addressee(name))?.endpoint ?? undefined,
      isCut: (from, to) => this.network.isCut(from, to),
      pausedUntil: (id) => this.byId.get(id)?.owner?.pausedUntil ?? 0,
      delay: [NETWORK.minDelay, NETWORK.maxDelay],
    });
    this.stats = {
      ...this.workload.counts,
      ...this.commandClients.counts,
      events: 0,
      time: 0,
      committed: 0,
      leaders: 0,
      maxTerm: 0,
      ...emptyFaultCounts(),
      joins: 0,
      confChanges: 0,
      rejoins: 0,
      delivered: 0,
      deliveredToNewIncarnation: 0,
      dropped: 0,
      snapshotsInstalled: 0,
      snapshotsReinstalled: 0,
      convergenceMs: 0,
    };
    this.stateSeeds = new SeededRandom(root.nextUint32());
    this.membership = new DriverMembership(
      {
        random: this.random,
        nodes: () => this.nodes,
        node: (id) => this.byId.get(id),
        addNode: (id) => this.addNode(id, false),
        start: (node) => this.start(node),
        now: () => this.clock.now,
        schedule: (delay, work) => this.schedule(delay, work),
        note: (node, text) => this.note(node, text),
        violation: (error) => this.violation(error),
        converging: () => this.converging,
        track: (node, what, answer) => this.workload.track(node, what, answer),
      },
      new SeededRandom(root.nextUint32()),
    );
    for (const id of VOTERS) this.addNode(id, true);
  }

  async run(): Promise<void> {
    try {
      const t = Object.entries(this.tuning).map(([k, v]) => `${k}=${v}`);
      this.note("-", `${this.profile.name} run: ${t.join(" ")} faultGap=${this.faultGap}`);
      for (const node of this.nodes) this.start(node);
      this.schedule(between(this.random, this.profile.clientGap), () => this.client());
      this.faults.begin();
      // New members that bring themselves in leave the operator only the disks to lose.
      if (this.profile.joins === "operator") this.membership.begin();
      while (this.clock.now < this.faultyMs) await this.next();
      await this.converge();
    } catch (error) {
      if (!(error instanceof InvariantViolation)) throw error;
      throw SimulationFailure.of(this.seed, error, this.events, this.clock.now, this.trace.format());
    } finally {
      this.finishStats();
    }
  }

  private finishStats(): void {
    Object.assign(
      this.stats,
      this.workload.counts,
      this.commandClients.counts,
      this.faults.counts,
      this.membership.counts,
      {
        events: this.events,
        time: this.clock.now,
        committed: this.checker.committedIndex,
      },
    );
  }

  // --- the loop ---------------------------------------------------------------------------------

  private async next(): Promise<void> {
    this.events++;
    if (this.network.nextTime() <= this.clock.peekTime()) {
      const delivery = this.network.next()!;
      this.clock.advanceTo(delivery.at);
      this.deliver(delivery);
    } else if (this.clock.peekTime() === Number.POSITIVE_INFINITY) {
      throw new InvariantViolation("liveness", "nothing is left to happen");
    } else {
      this.clock.fireNext();
    }
    // Every continuation the event released runs now, before the next event: a macrotask boundary
    // drains the microtask queue, and nothing in a run uses Node's own timers.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (this.violationSeen !== null) throw this.asViolation(this.violationSeen);
    this.observe();
  }

  private deliver(d: Delivery): void {
    const node = this.byId.get(this.membership.addressee(d.message.to));
    if (d.cut || node === undefined || node.transport === null) {
      this.stats.dropped++;
      this.trace.add(
        this.events,
        this.clock.now,
        d.message.to,
        "drop",
        d.cut ? "(link cut)" : "(node down)",
        d.message,
      );
      return;
    }
    if (node.owner !== null && node.owner.pausedUntil > this.clock.now) {
      this.backlog.get(node.id)?.push(d) ?? this.backlog.set(node.id, [d]);
      return;
    }
    this.stats.delivered++;
    const m = d.message;
    if (m.to !== node.id) this.stats.deliveredToNewIncarnation++;
    this.trace.add(this.events, this.clock.now, node.id, "deliver", "", m);
    if (m.type === "vote-response") this.membershipChecker.observeGrant(m);
    const driver = node.driver;
    const before = driver?.raft.status();
    node.transport.deliver(m);
    // The driver steps a message as it arrives: the vote it granted, if any, is in its status now.
    if (m.type === "vote" && before !== undefined && driver !== null && driver.failureCause() === null)
      this.membershipChecker.observeVoteRequest(node.id, m, before, driver.raft.status());
  }

  /** What every running driver's core now says: one leader per term, commits that never go back. */
  private observe(): void {
    for (const node of this.nodes) {
      const driver = node.driver;
      if (driver === null || driver.failureCause() !== null) continue;
      const s = driver.raft.status();
      if (s.role === "leader" && this.checker.observeLeader(node.id, s.term)) {
        this.stats.leaders++;
        this.note(node.id, `leader t${s.term} (commit ${s.commit}, last ${s.lastIndex})`);
      }
      if (s.term > this.stats.maxTerm) this.stats.maxTerm = s.term;
      this.membershipChecker.observeStatus(node.id, this.lastStatus.get(node.id) ?? null, s);
      this.lastStatus.set(node.id, s);
      const last = this.lastCommit.get(node.id) ?? 0;
      if (s.commit < last)
        throw new InvariantViolation(
          "monotonic-progress",
          `${node.id}'s commit went from ${last} back to ${s.commit}`,
        );
      // A lost disk counts as holding the entry: it never votes again under its ID.
      if (s.role === "leader" && s.commit > last)
        checkCommitDurable(node.id, s, (id) =>
          this.membership.isLost(id) ? null : (this.byId.get(id)?.logDisk.durableQuorumView ?? EMPTY_LOG),
        );
      this.lastCommit.set(node.id, s.commit);
    }
  }

  private schedule(delay: number, work: () => void): void {
    this.clock.at(this.clock.now + delay, this.sim, work);
  }

  // --- nodes ------------------------------------------------------------------------------------

  private start(node: DriverNode): void {
    this.lastCommit.delete(node.id);
    this.lastStatus.delete(node.id);
    this.backlog.delete(node.id);
    const starting = node.start({
      clock: this.clock,
      random: new SeededRandom(this.random.nextUint32()),
      tuning: this.tuning,
      bootstrap: node.initial ? VOTERS : null,
      voters: VOTERS,
      post: (m) => this.post(m),
      requests: this.requests,
      forwards: this.forwards,
      joins:
        this.profile.joins === "new-members"
          ? {
              names: VOTERS,
              electionTimeoutMs: this.tuning.electionTimeoutMs,
              deadlineMs: PROPOSAL_DEADLINE_MS,
              maxPromoteLagEntries: JOIN_PROMOTE_LAG_ENTRIES,
            }
          : null,
      watch: this.watchFor(node),
      createCore: this.createCore,
    });
    const life = node.life;
    this.note(node.id, `start #${life}`);
    starting.then(
      () => {
        const driver = node.driver;
        if (driver === null || node.life !== life) return;
        driver.failed.then((failure) => {
          if (node.life !== life) return;
          const why = `${describeError(failure)} ${describeError(failure.cause)}`;
          // Only the fault injected may stop it: any other cause is the driver's own failure.
          if (!node.stoppedBy(failure)) {
            this.violation(new InvariantViolation("core-contract", `${node.id}'s driver stopped: ${why}`));
            return;
          }
          // As a voter does, the process ends once its driver stopped; what the failed fsync covered
          // may be gone, as after a power loss.
          this.note(node.id, `driver stopped, the process exits: ${why}`);
          this.faults.crash(node, false);
        });
      },
      (error: unknown) =>
        this.violation(
          new InvariantViolation("core-contract", `${node.id} failed to start: ${describeError(error)}`),
        ),
    );
  }

  private post(m: Message): void {
    const outcome = this.network.send(m, this.clock.now);
    if (outcome === "dropped" || outcome === "cut") this.stats.dropped++;
  }

  private watchFor(node: DriverNode): NodeWatch {
    return {
      opened: (hardState) => this.lastHard.set(node.id, hardState),
      committed: (ops, results, log) => this.committed(node, ops, results, log),
      applied: (entry, digest, chain) => {
        const term = node.driver?.raft.status().term ?? entry.term;
        const first = entry.index > this.checker.committedIndex;
        this.checker.observeApply(node.id, entry, digest, chain, term);
        if (first) {
          this.membership.observeCommitted(entry);
          this.commandClients.observeCommitted(entry);
        }
        if (first && entry.type === "conf") this.membershipChecker.observeCommittedChange(entry);
        this.membership.observeApplied(node, entry);
      },
      restored: (index, term, chain) => {
        this.stats.snapshotsInstalled++;
        // Only start-up recovery installs one before the driver runs.
        if (node.driver === null) this.stats.snapshotsReinstalled++;
        this.checker.observeRestore(node.id, index, term, chain);
      },
      ready: (rd, status, log) => {
        this.checkLeaderLog(node, rd, status, log);
        if (status.role === "leader") {
          const pending = changesAfter(this.checker.committedIndex, log, rd.entries);
          this.membershipChecker.checkUncommittedChanges(node.id, status.term, pending);
        }
      },
      sending: (m, durable) => checkVouched(node.id, m, durable.hardState, durable.lastIndex),
      violation: (error) => this.violation(error),
      log: (line) => this.note(node.id, line),
    };
  }

  /**
   * A new leader's log, as its first Ready of the term extends it, holds every entry committed by an
   * earlier term (invariant 3): its stored log under the Ready's snapshot and entries.
   */
  private checkLeaderLog(node: DriverNode, rd: Ready, status: RaftStatus, log: LogStore): void {
    if (status.role !== "leader" || (this.leaderLogChecked.get(node.id) ?? 0) >= status.term) return;
    this.leaderLogChecked.set(node.id, status.term);
    this.checker.checkLeaderLog(node.id, status.term, status.lastIndex, termsWithReady(rd, log));
  }

  /** The log's group commits: persisted hard states never go back, appended entries match other logs. */
  private committed(
    node: DriverNode,
    ops: readonly StoreOp[],
    results: readonly (Error | null)[],
    log: LogStore,
  ): void {
    ops.forEach((op, k) => {
      if (results[k] !== null) return;
      if (op.kind === "record-snapshot") this.faults.afterSnapshotWrite(node, false);
      else if (op.snapshot !== null) this.faults.afterSnapshotWrite(node, true);
      // A snapshot taken, copied or received holds the committed configuration at its index.
      if (op.kind === "record-snapshot") {
        this.membershipChecker.checkSnapshotConf(node.id, op.snapshot.meta);
        return;
      }
      if (op.snapshot !== null) this.membershipChecker.checkSnapshotConf(node.id, op.snapshot.meta);
      if (op.hardState !== null) {
        const previous = this.lastHard.get(node.id)!;
        this.checker.observeHardState(node.id, previous, op.hardState);
        this.lastHard.set(node.id, op.hardState);
      }
      const first = op.entries[0];
      if (first === undefined) return;
      const base = log.firstIndex() - 1;
      const from = Math.max(0, base + 1 - first.index);
      if (from >= op.entries.length) return;
      const prevTerm = log.term(first.index + from - 1);
      this.checker.observeAppend(node.id, op.entries, from, prevTerm);
    });
  }

  // --- clients and faults -------------------------------------------------------------------------

  private client(): void {
    if (this.converging) return;
    this.schedule(between(this.random, this.profile.clientGap), () => this.client());
    if (this.random.chance(0.4)) this.commandClients.operate();
    else this.workload.operate();
  }

  /** A node with a new ID (never reused), its disks empty: one of the bootstrapped voters, or one to join. */
  private addNode(id: NodeId, initial: boolean): DriverNode {
    const skew = 0.9 + this.random.nextInt(21) / 100;
    const node = new DriverNode(
      id,
      initial,
      new SimLogDisk(),
      new SimStateDisk(new SeededRandom(this.stateSeeds.nextUint32())),
      skew,
    );
    this.nodes.push(node);
    this.byId.set(id, node);
    this.network.addNode(id);
    return node;
  }

  /** Pauses `node`'s process: its timers wait, and what reaches it waits in its backlog. */
  private pause(node: DriverNode, until: number): void {
    const owner = node.owner;
    if (owner === null) return;
    owner.pausedUntil = until;
    this.clock.at(until, this.sim, () => this.resume(node, owner));
  }

  private resume(node: DriverNode, owner: TimerOwner): void {
    if (node.owner !== owner) return;
    const waiting = this.backlog.get(node.id) ?? [];
    this.backlog.delete(node.id);
    this.note(node.id, `resumed, ${waiting.length} messages waiting`);
    for (const d of waiting) this.deliver(d);
  }

  // --- convergence --------------------------------------------------------------------------------

  private async converge(): Promise<void> {
    this.converging = true;
    this.faults.stop();
    this.note("-", "converge: network healed, faults and clients stopped");
    for (const node of this.nodes) {
      if (node.owner !== null && node.owner.pausedUntil > this.clock.now)
        node.owner.pausedUntil = this.clock.now;
      const waiting = this.backlog.get(node.id);
      if (waiting !== undefined && node.owner !== null) this.resume(node, node.owner);
      if (!node.running && !node.retired) this.start(node);
    }
    const started = this.clock.now;
    while (!this.converged()) {
      if (this.clock.now - started > this.convergenceMs)
        throw new InvariantViolation(
          "liveness",
          `not converged after ${this.convergenceMs} ms: ${this.describe()}`,
        );
      await this.next();
    }
    this.stats.convergenceMs = this.clock.now - started;
    for (const node of this.members()) {
      const sm = node.state!.live;
      this.checker.checkFinal(node.id, sm.applied, sm.digest);
    }
    // Once the cluster is quiet and every call's deadline has passed, every call a running driver took
    // is answered: a proposal or read left waiting would hold its caller, and its admission, for good.
    // A read times out after two election timeouts of its node's clock, which may run 10 % slow. A
    // queued command's deadline starts with its unit: it may first wait out one for every unit ahead of
    // it (a voter outside the configuration, which no leader tells of its removal, fails each unit only
    // once it has waited for a leader).
    const unitsAhead = Math.max(
      0,
      ...this.nodes.map((n) => {
        const queued = n.commands?.scheduler.queued;
        return queued === undefined ? 0 : queued.data + queued.control;
      }),
    );
    const quietUntil =
      this.clock.now +
      Math.max((unitsAhead + 1) * PROPOSAL_DEADLINE_MS * 1.1, 2 * this.tuning.electionTimeoutMs * 1.1) +
      50;
    const unanswered = (): string[] =>
      this.nodes.flatMap((n) =>
        n.driver === null ? [] : this.workload.unanswered(n).map((call) => `${n.id} ${call}`),
      );
    // A command a follower gave up on may still be queued on the leader, holding its reservation there.
    const held = (): string[] => this.commandClients.held(this.nodes.filter((n) => n.driver !== null));
    while (this.clock.now < quietUntil && (unanswered().length > 0 || held().length > 0)) await this.next();
    const left = unanswered();
    if (left.length > 0)
      throw new InvariantViolation(
        "liveness",
        `calls left unanswered in a quiet cluster: ${left.join(", ")}`,
      );
    const reserved = held();
    if (reserved.length > 0)
      throw new InvariantViolation(
        "reservations-released",
        `reservations held in a quiet cluster with every command answered: ${reserved.join(", ")}`,
      );
  }

  /** The members of the leader's configuration (all running when converged). */
  private members(): DriverNode[] {
    const leader = this.nodes.find((n) => n.driver?.isLeader() === true);
    if (leader === undefined) return [];
    const conf = leader.driver!.raft.status().conf;
    const ids = [...conf.voters, ...(conf.learners ?? [])];
    return this.nodes.filter((n) => ids.includes(n.id));
  }

  /**
   * One leader followed by every member of its configuration, everything it holds committed and applied
   * everywhere, and the operator's repairs done; nodes outside the configuration are not waited for.
   */
  private converged(): boolean {
    const leaders = this.nodes.filter((n) => n.driver?.isLeader() === true);
    if (leaders.length !== 1) return false;
    const ls = leaders[0]!.driver!.raft.status();
    if (ls.commit !== ls.lastIndex || !this.membership.settled(ls.conf)) return false;
    return this.members().every((n) => {
      if (n.driver === null || n.state === null) return false;
      const s = n.driver.raft.status();
      return s.term === ls.term && s.leader === ls.id && n.state.live.applied === ls.lastIndex;
    });
  }

  private describe(): string {
    return this.nodes
      .map((n) => {
        if (n.driver === null) return `${n.id} down`;
        const s = n.driver.raft.status();
        return `${n.id} ${s.role} t${s.term} leader=${s.leader ?? "-"} commit=${s.commit} last=${s.lastIndex} applied=${n.state?.live.applied}`;
      })
      .join("; ");
  }

  // --- reporting ----------------------------------------------------------------------------------

  private violation(error: unknown): void {
    this.violationSeen ??= error;
  }

  private asViolation(error: unknown): InvariantViolation {
    if (error instanceof InvariantViolation) return error;
    return new InvariantViolation("core-contract", describeError(error));
  }

  private note(node: string, text: string): void {
    this.trace.add(this.events, this.clock.now, node, "fault", text);
  }
}

/** Runs one seed to completion; a violation is returned, not thrown. */
export async function runDriverSeed(seed: number, options: DriverSimOptions = {}): Promise<DriverSimResult> {
  const sim = new DriverSimulator(seed, options);
  let violation: SimulationFailure | undefined;
  try {
    await sim.run();
  } catch (error) {
    if (!(error instanceof SimulationFailure)) throw error;
    violation = error;
  }
  return { seed, ok: violation === undefined, violation, stats: sim.stats, trace: sim.trace };
}
