import type { SeededRandom } from "../raft/index.js";
import type { FaultProfile, Range } from "./fault-profile.js";
import type { MembershipOperator } from "./membership-operator.js";
import type { NodeRegistry, SimNode } from "./node-registry.js";
import { between, pick, weighted } from "./random-choices.js";
import { describeWrite } from "./sim-disk.js";
import type { BurstKind, SimEvent } from "./sim-events.js";
import type { LinkCut, SimNetwork } from "./sim-network.js";
import type { Counters } from "./sim-stats.js";
import type { TraceKind } from "./trace.js";

/** What the fault injector sees of the run it disturbs. */
export interface FaultHost {
  /** The run's stream: fault choices interleave with the simulator's own draws. */
  readonly random: SeededRandom;
  readonly profile: FaultProfile;
  readonly nodes: NodeRegistry;
  readonly network: SimNetwork;
  /** Null when the profile makes no membership changes; disks are lost only with one. */
  readonly operator: MembershipOperator | null;
  readonly counters: Counters;
  now(): number;
  schedule(at: number, event: SimEvent): void;
  note(node: string, kind: TraceKind, text: string): void;
  /** The live node that believes itself leader in the highest term, if any. */
  knownLeader(): SimNode | null;
  /** Drops a node's volatile state: its core, a write waiting for its fsync, pending client work. */
  stop(node: SimNode): void;
}

/**
 * The faults of a run: crashes, lost disks, partitions that heal after a while, and bursts during
 * which the network drops, duplicates or delays more, or disks stall. Bursts of a kind may overlap;
 * the levels fall back to the profile's calm ones when the last of its kind ends.
 */
export class FaultInjector {
  private readonly bursts = new Map<BurstKind, number>();

  constructor(private readonly host: FaultHost) {}

  /** One fault, chosen by the profile's mix. */
  inject(): void {
    const { nodes, network, random, profile } = this.host;
    if (profile.powerLossChance > 0 && random.chance(profile.powerLossChance)) {
      this.powerLoss();
      return;
    }
    if (profile.pauseChance > 0 && random.chance(profile.pauseChance)) {
      this.pauseSomeNode();
      return;
    }
    const mix = profile.faultMix;
    const choice = weighted(random, [
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
        const id = this.target(nodes.active()).id;
        this.partitioned(network.isolate(id), `isolate ${id}`);
        return;
      }
      case 2: {
        const ids = nodes.active().map((n) => n.id);
        if (ids.length < 2) return;
        const from = pick(random, ids);
        const to = pick(
          random,
          ids.filter((id) => id !== from),
        );
        this.partitioned(network.cut(from, to), `cut ${from} -> ${to} (one way)`);
        return;
      }
      case 7:
        this.wipeSomeNode();
        return;
      default:
        this.startBurst((["drop", "duplicate", "delay", "disk"] as const)[choice - 3]!);
    }
  }

  /** One running node, the leader more often, stops handling anything for a while (Simulator.resume). */
  private pauseSomeNode(): void {
    const live = this.host.nodes.running().filter((n) => n.pausedUntil === 0);
    if (live.length === 0) return;
    const node = this.target(live);
    const until = this.host.now() + between(this.host.random, this.host.profile.faultDuration);
    node.pausedUntil = until;
    this.host.counters.pauses++;
    this.host.schedule(until, { kind: "resume", node, incarnation: node.incarnation });
    this.host.note(node.id, "fault", `paused until ${until}`);
  }

  /** Every running node loses power at once; each restarts after a downtime of its own. */
  private powerLoss(): void {
    const live = this.host.nodes.running();
    if (live.length === 0) return;
    this.host.counters.powerLosses++;
    this.host.note("-", "fault", `power loss: ${live.map((n) => n.id).join(", ")} crash at once`);
    for (const node of live) this.crash(node, false);
  }

  /**
   * A crash: the node loses what its state machine had not made durable and, on power loss (unless
   * `keepUnsynced`), what its disk had not; it restarts later. Which of the two a single crash is, the
   * profile's `processCrashChance` decides.
   */
  crash(node: SimNode, keepUnsynced = this.processCrash()): void {
    const { counters } = this.host;
    const lost = node.disk.crash(keepUnsynced);
    const undone = node.state.crash();
    this.host.stop(node);
    counters.crashes++;
    if (lost !== null) counters.lostWrites++;
    const losses: string[] = [];
    if (lost !== null) losses.push(`unsynced ${describeWrite(lost)}`);
    if (undone > 0) losses.push(`${undone} applied batches`);
    const what = keepUnsynced ? "process killed (its written batch reaches the disk)" : "crash";
    this.host.note(node.id, "fault", losses.length === 0 ? what : `${what}, losing ${losses.join(" and ")}`);
    this.schedule(this.host.profile.downtime, { kind: "restart", node });
  }

  private processCrash(): boolean {
    const chance = this.host.profile.processCrashChance;
    return chance > 0 && this.host.random.chance(chance);
  }

  heal(cuts: readonly LinkCut[], what: string): void {
    this.host.network.restore(cuts);
    this.host.note("-", "fault", `heal ${what}`);
  }

  endBurst(burst: BurstKind): void {
    const active = (this.bursts.get(burst) ?? 0) - 1;
    if (active > 0) this.bursts.set(burst, active);
    else this.bursts.delete(burst);
    this.applyFaultLevels();
    this.host.note("-", "fault", `${burst} burst ends`);
  }

  /**
   * Ends every fault for the convergence phase: links heal, bursts stop, and what the network and
   * disks still do is only delay and reorder.
   */
  stopAll(): void {
    const { profile, network, nodes } = this.host;
    this.bursts.clear();
    network.heal();
    network.setFaults({ ...profile.network, dropRate: 0, duplicateRate: 0, spikeRate: 0 });
    nodes.setDiskFaults({ ...profile.disk, stallRate: 0 });
  }

  private crashSomeNode(): void {
    const live = this.host.nodes.running();
    const down = this.host.nodes.active().length - live.length;
    if (live.length === 0 || down >= this.host.profile.maxCrashed) return;
    this.crash(this.target(live));
  }

  /**
   * A node loses its disk, and with it its log, its vote and its state machine. It never comes back
   * under its ID: one that forgot its vote or its log could break safety as a voter. The operator
   * removes it and has a fresh node take its place. Only a disk whose loss leaves a quorum of every
   * configuration in play is lost, or nothing could ever commit the removal.
   */
  private wipeSomeNode(): void {
    const operator = this.host.operator;
    if (operator === null) return;
    const candidates = this.host.nodes.active().filter((n) => operator.mayWipe(n.id));
    if (candidates.length === 0) return;
    const node = this.target(candidates);
    if (node.core !== null) {
      node.disk.crash();
      this.host.stop(node);
    }
    node.wiped = true;
    node.retired = true;
    operator.wiped(node.id);
    this.host.counters.wipes++;
    this.host.note(node.id, "fault", "wipe: disk lost, the node leaves the cluster for good");
  }

  /** Faults aimed at the leader are the ones that leave divergent logs behind. */
  private target(candidates: readonly SimNode[]): SimNode {
    const { random, profile } = this.host;
    const leader = this.host.knownLeader();
    return leader !== null && candidates.includes(leader) && random.chance(profile.leaderFaultBias)
      ? leader
      : pick(random, candidates);
  }

  private partitioned(cuts: readonly LinkCut[], what: string): void {
    this.host.counters.partitions++;
    this.host.note("-", "fault", what);
    this.schedule(this.host.profile.faultDuration, { kind: "heal", cuts, what });
  }

  private startBurst(burst: BurstKind): void {
    this.bursts.set(burst, (this.bursts.get(burst) ?? 0) + 1);
    this.host.counters.bursts++;
    this.applyFaultLevels();
    this.host.note("-", "fault", `${burst} burst begins`);
    this.schedule(this.host.profile.faultDuration, { kind: "burst-end", burst });
  }

  private applyFaultLevels(): void {
    const calm = this.host.profile.network;
    const b = this.host.profile.bursts;
    const delay = this.bursts.has("delay");
    this.host.network.setFaults({
      ...calm,
      dropRate: this.bursts.has("drop") ? b.dropRate : calm.dropRate,
      duplicateRate: this.bursts.has("duplicate") ? b.duplicateRate : calm.duplicateRate,
      spikeRate: delay ? b.spikeRate : calm.spikeRate,
      spikeDelay: delay ? b.spikeDelay : calm.spikeDelay,
    });
    const stall = this.bursts.has("disk");
    const disk = this.host.profile.disk;
    this.host.nodes.setDiskFaults({
      ...disk,
      stallRate: stall ? b.diskStallRate : disk.stallRate,
      stallDelay: stall ? b.diskStallDelay : disk.stallDelay,
    });
  }

  /** Schedules `event` a random time within `range` from now. */
  private schedule(range: Range, event: SimEvent): void {
    this.host.schedule(this.host.now() + between(this.host.random, range), event);
  }
}
