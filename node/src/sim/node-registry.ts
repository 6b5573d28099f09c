import {
  bootstrapState,
  type ConfState,
  type HardState,
  type NodeId,
  type RaftNode,
  type RaftStatus,
  type Ready,
  SeededRandom,
} from "../raft/index.js";
import { MemorySnapshotSink } from "../raft/memory-snapshot-sink.js";
import { SnapshotInbox } from "../raft/snapshot-inbox.js";
import type { LazySnapshotStorage } from "./lazy-snapshot-storage.js";
import type { HeldHardState, ReadyPlan } from "./ready-plan.js";
import { type DiskFaults, SimDisk } from "./sim-disk.js";
import type { Delivery } from "./sim-network.js";
import { StateMachineStore } from "./state-machine-store.js";

/** The voters a run bootstraps; nodes that join later get the next IDs. */
export const INITIAL_VOTERS: readonly NodeId[] = ["n1", "n2", "n3"];

export interface PendingProposal {
  readonly term: number;
  readonly digest: number;
}

/**
 * One simulated server: a durable disk and a state machine that outlive crashes (in part), and
 * volatile state that does not.
 */
export interface SimNode {
  readonly id: NodeId;
  readonly disk: SimDisk;
  readonly state: StateMachineStore;
  readonly tickInterval: number;
  core: RaftNode | null;
  /**
   * Never to start again: its disk was lost (`wiped`), or it was removed from the cluster and shut
   * down. Its ID is never reused, as etcd never reuses a member ID.
   */
  retired: boolean;
  wiped: boolean;
  /** Bumped on every crash so the timers of an earlier life are ignored. */
  incarnation: number;
  /**
   * A copy of the state machine for a snapshot the core wants (lazy snapshots): under way, or made at
   * an index the core has not advanced to yet and held until it has (see Simulator.copySnapshot). A
   * crash loses it.
   */
  copy: "copying" | HeldCopy | null;
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
  /** Receives streamed snapshots' bytes, as a voter's driver does; a crash loses it. */
  inbox: SnapshotInbox<MemorySnapshotSink>;
  /**
   * Paused (a stopped process, a long GC, a stalled VM) until this time, 0 when running: it neither
   * ticks nor handles anything meanwhile, and what reaches it waits in `backlog`, handled in order when
   * it resumes. A crash ends the pause and loses the backlog.
   */
  pausedUntil: number;
  backlog: Delivery[];
}

/** A copy of the state machine at `index`, made but not recorded yet. */
export interface HeldCopy {
  readonly index: number;
  readonly data: Uint8Array;
}

/** Where a new node's randomness comes from, and the timing its disk and ticks start with. */
export interface NodeSetup {
  /** Seeds each new disk's own stream. */
  readonly diskSeeds: SeededRandom;
  /** Picks each node's tick period. */
  readonly clock: SeededRandom;
  /** Decides, on each crash, how much of a state machine survives (shared by every node). */
  readonly stateLoss: SeededRandom;
  readonly tickInterval: number;
  readonly tickSkew: number;
  /** How disks misbehave at first (see setDiskFaults). */
  readonly disk: DiskFaults;
  /**
   * Decides for each new disk whether it keeps lazy snapshots (`chance`), from a stream of its own so
   * that the draws shift nothing else; without it every disk is eager.
   */
  readonly lazySnapshots?: { readonly chance: number; readonly random: SeededRandom };
}

/**
 * Every node of a run, in the order they appeared: the bootstrapped voters first, then each node that
 * joined. Nodes are never forgotten, so a message to a retired node finds it down rather than unknown.
 */
export class NodeRegistry {
  private readonly list: SimNode[] = [];
  private readonly byId = new Map<NodeId, SimNode>();
  private diskFaults: DiskFaults;

  constructor(private readonly setup: NodeSetup) {
    this.diskFaults = setup.disk;
  }

  get all(): readonly SimNode[] {
    return this.list;
  }

  get(id: NodeId): SimNode | undefined {
    return this.byId.get(id);
  }

  /** Nodes whose core is running. */
  running(): SimNode[] {
    return this.list.filter((n) => n.core !== null);
  }

  /** Nodes that are or may again be running: neither wiped nor shut down for good. */
  active(): SimNode[] {
    return this.list.filter((n) => !n.retired);
  }

  /** Sets how every disk misbehaves from now on, those of nodes added later included. */
  setDiskFaults(faults: DiskFaults): void {
    this.diskFaults = faults;
    for (const node of this.list) node.disk.setFaults(faults);
  }

  /** The configuration `id` has applied, or null while it is not running. */
  appliedConf(id: NodeId): ConfState | null {
    const node = this.byId.get(id);
    return node?.core == null ? null : (node.status?.conf ?? null);
  }

  /** The disk holding `id`'s log, or null once it was lost. */
  diskOf(id: NodeId): LazySnapshotStorage | null {
    const node = this.byId.get(id);
    if (node === undefined) throw new Error(`${id} was never started`);
    return node.wiped ? null : node.disk.storage;
  }

  /**
   * Adds a node with the next ID (n1, n2, ...) and an empty disk. Given `bootstrap`, the voters of a new
   * cluster it is one of, its disk gets their configuration as the log's first entry; otherwise it
   * holds no configuration and waits to be added, as a replacement for a lost node does.
   */
  create(bootstrap: readonly NodeId[] | null): SimNode {
    const id = `n${this.list.length + 1}`;
    if (bootstrap !== null && !bootstrap.includes(id)) throw new Error(`${id} is not among ${bootstrap}`);
    const s = this.setup;
    const skew = s.clock.nextInt(2 * s.tickSkew + 1) - s.tickSkew;
    const lazy = s.lazySnapshots?.random.chance(s.lazySnapshots.chance) ?? false;
    const disk = new SimDisk(new SeededRandom(s.diskSeeds.nextUint32()), this.diskFaults, lazy);
    if (bootstrap !== null) {
      const { entries, hardState } = bootstrapState(bootstrap);
      disk.storage.append(entries);
      disk.storage.setHardState(hardState);
    }
    const node: SimNode = {
      id,
      disk,
      state: new StateMachineStore(s.stateLoss),
      tickInterval: Math.max(2, s.tickInterval + skew),
      core: null,
      retired: false,
      wiped: false,
      incarnation: 0,
      copy: null,
      writing: null,
      held: { last: { term: 0, vote: null, commit: 0 }, unsaved: null },
      durable: { term: 0, vote: null, commit: 0 },
      commit: 0,
      status: null,
      checkedLeaderTerm: 0,
      proposals: new Map(),
      waitingReads: [],
      inbox: new SnapshotInbox(() => new MemorySnapshotSink()),
      pausedUntil: 0,
      backlog: [],
    };
    this.list.push(node);
    this.byId.set(id, node);
    return node;
  }
}
