import type { SeededRandom } from "../../raft/seeded-random.js";
import { StorageFailedError } from "../../storage/storage-errors.js";
import type { Range } from "../fault-profile.js";
import { InvariantViolation } from "../invariants.js";
import { between } from "../random-choices.js";
import { describeError } from "../sim-failure.js";
import type { LinkCut, NetworkFaults, SimNetwork } from "../sim-network.js";
import type { DriverNode } from "./driver-node.js";
import type { DriverProfile } from "./driver-profiles.js";

/** The network between faults: a little loss, duplication and reordering. */
export const NETWORK: NetworkFaults = {
  dropRate: 0.01,
  duplicateRate: 0.01,
  minDelay: 1,
  maxDelay: 4,
  spikeRate: 0.02,
  spikeDelay: 30,
};

/** The network during a burst. */
const BURST: NetworkFaults = {
  ...NETWORK,
  dropRate: 0.4,
  duplicateRate: 0.3,
  spikeRate: 0.4,
  spikeDelay: 80,
};

/** The fault that isolates its target (see DriverProfile.isolateBias). */
const ISOLATE = 2;

/** The faults a run injected, for its statistics. */
export interface FaultCounts {
  crashes: number;
  powerLosses: number;
  /** Power losses of every running node at once. */
  clusterPowerLosses: number;
  stateBatchesLost: number;
  pauses: number;
  /** Disk errors injected, each of which must stop its driver. */
  storageFaults: number;
  /** Processes that died just after their log took a snapshot. */
  snapshotCrashes: number;
  /** Processes shut down as a voter does when told to stop, each restarted later. */
  shutdowns: number;
  /** Disks lost for good, each member replaced by a new incarnation of its name. */
  wipes: number;
  partitions: number;
  bursts: number;
}

export function emptyFaultCounts(): FaultCounts {
  return {
    crashes: 0,
    powerLosses: 0,
    clusterPowerLosses: 0,
    stateBatchesLost: 0,
    pauses: 0,
    storageFaults: 0,
    snapshotCrashes: 0,
    shutdowns: 0,
    wipes: 0,
    partitions: 0,
    bursts: 0,
  };
}

/** What the faults see of the run they strike. */
export interface DriverFaultHost {
  readonly random: SeededRandom;
  readonly network: SimNetwork;
  /** The nodes whose process runs, removed ones excepted. */
  running(): DriverNode[];
  now(): number;
  schedule(delay: number, work: () => void): void;
  note(node: string, text: string): void;
  start(node: DriverNode): void;
  /** Pauses `node`'s process until `until`: no timer fires and nothing is delivered meanwhile. */
  pause(node: DriverNode, until: number): void;
  violation(error: unknown): void;
  /** The calls (proposals, reads, membership changes) `node`'s process took and has not answered. */
  unanswered(node: DriverNode): string[];
  /** The admission reservations `node`'s current life holds, described. */
  held(node: DriverNode): string[];
  /**
   * `node`'s disk is lost for good, if the cluster can spare it (its quorums hold without it); whether
   * it was.
   */
  wipe(node: DriverNode): boolean;
}

/**
 * The faults of a driver run, one every `gap`: a process killed (its committed writes reach the disk),
 * shut down as told to stop, or its machine's power lost, now and then every machine's at once, or its
 * disk lost for good; a node isolated; a burst of loss, duplication and delay; a pause; a disk error,
 * after which its driver must stop, as a voter's does, and the process restarts. Besides, now and then
 * a process dies right after its log takes a snapshot (afterSnapshotWrite).
 */
export class DriverFaults {
  readonly counts = emptyFaultCounts();
  private stopped = false;

  constructor(
    private readonly host: DriverFaultHost,
    private readonly gap: Range,
    private readonly bias: Pick<DriverProfile, "leaderBias" | "isolateBias" | "wipeRate">,
  ) {}

  begin(): void {
    this.host.schedule(between(this.host.random, this.gap), () => this.inject());
  }

  /** No fault after this; the network heals. */
  stop(): void {
    this.stopped = true;
    this.host.network.heal();
    this.host.network.setFaults({ ...NETWORK, dropRate: 0, duplicateRate: 0, spikeRate: 0 });
  }

  /** The process dies, killed or by a power loss; it restarts later unless it was removed. */
  crash(node: DriverNode, keepUnsynced: boolean): void {
    const lost = node.crash(keepUnsynced);
    this.counts.crashes++;
    if (!keepUnsynced) this.counts.powerLosses++;
    this.counts.stateBatchesLost += lost.stateBatchesLost;
    const what = keepUnsynced ? "process killed" : "power loss";
    this.host.note(node.id, `${what} (${lost.stateBatchesLost} state batches lost)`);
    this.restartLater(node);
  }

  /**
   * `node`'s log just took a snapshot, `received` from the leader or its own: now and then (after a
   * received one far more often) its process dies within a few milliseconds, before or after the
   * write's fsync, before the state installs what it received: the windows start-up recovery exists
   * for, which faults at random times rarely hit.
   */
  afterSnapshotWrite(node: DriverNode, received: boolean): void {
    const { random } = this.host;
    if (this.stopped || !random.chance(received ? 0.5 : 0.05)) return;
    const owner = node.owner;
    this.host.schedule(random.nextInt(12), () => {
      if (this.stopped || owner === null || node.owner !== owner) return;
      this.counts.snapshotCrashes++;
      this.crash(node, random.chance(0.5));
    });
  }

  private restartLater(node: DriverNode): void {
    this.host.schedule(between(this.host.random, [10, 300]), () => {
      // The convergence phase may have started it already; a removed node stays down.
      if (!node.running && !node.retired) this.host.start(node);
    });
  }

  /**
   * The process shuts down as a voter told to stop does, then exits, and restarts later. Another fault
   * may end it first; only the storage fault injected into it may make the shutdown fail.
   */
  private shutDown(node: DriverNode): void {
    const owner = node.owner;
    this.counts.shutdowns++;
    this.host.note(node.id, "shutting down");
    node.shutDown().then(
      () => {
        if (node.owner !== owner) return;
        // A stopped driver fails what still waits: its callers must not hang until the process is gone.
        const left = this.host.unanswered(node);
        if (left.length > 0)
          this.host.violation(
            new InvariantViolation(
              "core-contract",
              `${node.id} stopped with unanswered calls: ${left.join(", ")}`,
            ),
          );
        // Its command scheduler exited: every command it took was answered and released.
        const held = this.host.held(node);
        if (held.length > 0)
          this.host.violation(
            new InvariantViolation(
              "reservations-released",
              `${node.id} stopped holding reservations: ${held.join(", ")}`,
            ),
          );
        node.crash(true);
        this.host.note(node.id, "shut down: the process exits");
        this.restartLater(node);
      },
      (error: unknown) => {
        if (node.owner !== owner || node.stoppedBy(error)) return;
        this.host.violation(
          new InvariantViolation("core-contract", `${node.id}'s shutdown failed: ${describeError(error)}`),
        );
      },
    );
  }

  private inject(): void {
    if (this.stopped) return;
    const { random, network } = this.host;
    this.host.schedule(between(random, this.gap), () => this.inject());
    const running = this.host.running();
    // The leader of the highest term: one isolated earlier may still think it leads.
    const leader = running
      .filter((n) => n.driver?.isLeader() === true)
      .reduce<DriverNode | undefined>(
        (best, n) =>
          best === undefined || n.driver!.raft.status().term > best.driver!.raft.status().term ? n : best,
        undefined,
      );
    const target =
      leader !== undefined && random.chance(this.bias.leaderBias)
        ? leader
        : running[random.nextInt(Math.max(1, running.length))];
    const isolate = this.bias.isolateBias > 0 && random.chance(this.bias.isolateBias);
    switch (isolate ? ISOLATE : random.nextInt(6)) {
      case 0:
      case 1: {
        if (target === undefined) return;
        if (random.chance(0.1)) {
          // The whole cluster loses power at once: a quorum may lose what it had only in its page cache.
          this.counts.clusterPowerLosses++;
          this.host.note("-", "power loss of every node");
          for (const node of running) this.crash(node, false);
          return;
        }
        if (running.length < 2) return;
        if (random.chance(this.bias.wipeRate) && this.host.wipe(target)) {
          this.counts.wipes++;
          return;
        }
        if (random.chance(0.2) && target.driver !== null) {
          this.shutDown(target);
          return;
        }
        this.crash(target, !random.chance(0.3));
        return;
      }
      case ISOLATE: {
        if (target === undefined) return;
        const cuts: LinkCut[] = network.isolate(target.id);
        this.counts.partitions++;
        this.host.note(target.id, "isolated");
        this.host.schedule(between(random, [20, 300]), () => {
          network.restore(cuts);
          this.host.note(target.id, "rejoined");
        });
        return;
      }
      case 3: {
        network.setFaults(BURST);
        this.counts.bursts++;
        this.host.note("-", "network burst");
        this.host.schedule(between(random, [20, 200]), () => {
          if (!this.stopped) network.setFaults(NETWORK);
        });
        return;
      }
      case 4: {
        const owner = target?.owner;
        if (
          target === undefined ||
          owner === null ||
          owner === undefined ||
          owner.pausedUntil > this.host.now()
        )
          return;
        const until = this.host.now() + between(random, [10, 200]);
        this.counts.pauses++;
        this.host.note(target.id, `paused until ${until}`);
        this.host.pause(target, until);
        return;
      }
      default:
        if (target !== undefined) this.diskError(target);
    }
  }

  /** Arms or strikes a disk error on `node`: only this error may stop its driver. */
  private diskError(node: DriverNode): void {
    if (node.driver === null || node.injected !== null) return;
    this.counts.storageFaults++;
    const note = (text: string): void => this.host.note(node.id, text);
    switch (this.host.random.nextInt(5)) {
      case 0: {
        const eio = new StorageFailedError("simulated EIO from fsync");
        node.injected = eio;
        node.store!.failNextSync(eio);
        note("the log's next fsync will fail");
        return;
      }
      case 1:
        node.injected = new StorageFailedError("simulated EIO writing a snapshot");
        node.store!.snapshotFiles.failWrites(node.injected);
        note("writes of received snapshots will fail");
        return;
      case 2:
        node.injected = new Error("simulated failure to commit the state database");
        node.state!.failNextApply(node.injected);
        note("the state's next apply will fail");
        return;
      case 3:
        node.injected = new Error("simulated failure of the state's background fsync");
        note("the state fails in the background");
        node.state!.failNow(node.injected);
        return;
      default: {
        const eio = new StorageFailedError("simulated EIO in the log's background work");
        node.injected = eio;
        note("the log fails in the background");
        node.store!.failNow(eio);
      }
    }
  }
}
