import type { RaftOptions } from "../raft/raft-config.js";
import type { SeededRandom } from "../raft/seeded-random.js";
import type { DiskFaults } from "./sim-disk.js";
import type { NetworkFaults } from "./sim-network.js";

/** The core options a profile may tune; identity, storage and randomness belong to the simulator. */
export type RaftTuning = Omit<RaftOptions, "id" | "voters" | "storage" | "random" | "applied">;

export type Range = readonly [min: number, max: number];

export type RaftVariants = { readonly [K in keyof RaftTuning]?: readonly number[] };

/** Relative weights; an operation's chance is its weight over the sum. */
export interface ClientMix {
  readonly propose: number;
  readonly proposeBatch: number;
  readonly read: number;
  readonly transfer: number;
}

export interface FaultMix {
  readonly crash: number;
  readonly isolate: number;
  readonly oneWayCut: number;
  readonly dropBurst: number;
  readonly duplicateBurst: number;
  readonly delayBurst: number;
  readonly diskStall: number;
  /** A node loses its disk for good; it needs `membership`, whose operator replaces the node. */
  readonly wipe: number;
}

/** How the membership operator (membership-operator.ts) changes the cluster while faults go on. */
export interface MembershipProfile {
  /** Time between two of the operator's looks at the cluster. */
  readonly gap: Range;
  /** Chance that a look with nothing to repair makes a change of the operator's own choosing. */
  readonly changeRate: number;
  /**
   * Relative weights of the changes the operator chooses besides these two: a new node joins
   * (weighted by how far the cluster is below five members) and a follower voter is removed (by how
   * far it is above two voters). Removing the leader itself, or a learner, weighs this much.
   */
  readonly removeLeader: number;
  readonly removeLearner: number;
  /** How far a learner's match index may be behind the leader's commit for it to be promoted. */
  readonly catchUpSlack: number;
}

/** How bad the network and disk get while a burst of that kind is active. */
export interface BurstLevels {
  readonly dropRate: number;
  readonly duplicateRate: number;
  readonly spikeRate: number;
  readonly spikeDelay: number;
  readonly diskStallRate: number;
  readonly diskStallDelay: number;
}

/** Everything that shapes one simulated run besides the seed. Times are simulated time units. */
export interface FaultProfile {
  readonly name: string;
  readonly raft: RaftTuning;
  /**
   * Per option, values of which each seed picks one in place of `raft`'s, so that a range of seeds
   * covers many configurations (one entry per message, a window of one, tiny chunks, ...).
   */
  readonly raftVariants: RaftVariants;
  /** Time units per tick; each node's own period differs from it by up to `tickSkew`. */
  readonly tickInterval: number;
  readonly tickSkew: number;
  readonly network: NetworkFaults;
  readonly disk: DiskFaults;
  readonly bursts: BurstLevels;
  readonly clientGap: Range;
  readonly clientMix: ClientMix;
  /** Chance a proposal goes to a node that believes it leads (in any term) rather than to any live node. */
  readonly leaderBias: number;
  /** Largest random padding of a command, so entry sizes vary around the message size limits. */
  readonly maxPadding: number;
  readonly faultGap: Range;
  readonly faultMix: FaultMix;
  /** Chance a crash or an isolation hits the leader rather than a random node. */
  readonly leaderFaultBias: number;
  readonly maxCrashed: number;
  /**
   * Chance that a fault is a power loss of the whole cluster: every running node crashes at once,
   * however many `maxCrashed` allows, losing what it had not made durable. 0 draws nothing, so a
   * profile without them replays its seeds unchanged.
   */
  readonly powerLossChance: number;
  /**
   * Chance that a single node's crash is its process killed, the machine up: its written but unsynced
   * batch reaches the disk anyway (SimDisk.crash). 0 draws nothing, as above.
   */
  readonly processCrashChance: number;
  /**
   * Chance that a fault pauses one node for `faultDuration` (a stopped process, a long GC): no ticks,
   * nothing handled, then everything that reached it at once. 0 draws nothing, as above.
   */
  readonly pauseChance: number;
  readonly downtime: Range;
  /** How long a partition or a burst lasts. */
  readonly faultDuration: Range;
  /** Applied entries between two local snapshots, and how many entries compaction keeps behind one. */
  readonly snapshotEvery: number;
  readonly keepAfterSnapshot: number;
  /**
   * Chance that a node's disk keeps lazy snapshots (LazySnapshotStorage, as the durable store does):
   * its local snapshots are points with no file, and a copy is made only once a leader asks for one to
   * send, `snapshotCopyDelay` later. Drawn per node from a stream of its own, so a run whose nodes all
   * drew eager disks replays exactly as before lazy snapshots existed.
   */
  readonly lazySnapshots: number;
  readonly snapshotCopyDelay: Range;
  /** Chance that a snapshot chunk has a byte flipped on the way. */
  readonly chunkCorruptRate: number;
  /** Membership changes made alongside the faults; null keeps the three bootstrapped voters. */
  readonly membership: MembershipProfile | null;
}

export const DEFAULT_PROFILE: FaultProfile = {
  name: "default",
  raft: {
    electionTicks: 5,
    heartbeatTicks: 2,
    maxSizePerMsg: 256,
    maxInflightMsgs: 4,
    maxInflightBytes: 2048,
    maxUncommittedEntriesBytes: 4096,
    maxCommittedSizePerReady: 512,
    snapshotChunkBytes: 64,
    maxInflightSnapshotChunks: 2,
  },
  raftVariants: {
    electionTicks: [3, 5, 8],
    heartbeatTicks: [1, 2],
    maxSizePerMsg: [1, 64, 256, 4096],
    maxInflightMsgs: [1, 2, 4, 64],
    maxInflightBytes: [0, 512, 2048],
    maxUncommittedEntriesBytes: [0, 512, 4096],
    maxCommittedSizePerReady: [1, 128, 4096],
    snapshotChunkBytes: [16, 48, 64, 1000],
    maxInflightSnapshotChunks: [1, 2, 8],
  },
  tickInterval: 10,
  tickSkew: 3,
  network: { dropRate: 0.01, duplicateRate: 0.01, minDelay: 1, maxDelay: 4, spikeRate: 0.02, spikeDelay: 30 },
  disk: { minSyncDelay: 1, maxSyncDelay: 4, stallRate: 0.02, stallDelay: 30 },
  bursts: {
    dropRate: 0.4,
    duplicateRate: 0.3,
    spikeRate: 0.4,
    spikeDelay: 80,
    diskStallRate: 0.5,
    diskStallDelay: 60,
  },
  clientGap: [2, 12],
  clientMix: { propose: 6, proposeBatch: 1, read: 3, transfer: 0.3 },
  leaderBias: 0.85,
  maxPadding: 40,
  faultGap: [20, 100],
  faultMix: {
    crash: 3,
    isolate: 2,
    oneWayCut: 2,
    dropBurst: 1,
    duplicateBurst: 1,
    delayBurst: 1,
    diskStall: 1,
    wipe: 0.6,
  },
  leaderFaultBias: 0.5,
  maxCrashed: 2,
  powerLossChance: 0,
  processCrashChance: 0,
  pauseChance: 0,
  downtime: [10, 150],
  faultDuration: [20, 200],
  snapshotEvery: 12,
  keepAfterSnapshot: 4,
  lazySnapshots: 0.25,
  snapshotCopyDelay: [5, 80],
  chunkCorruptRate: 0.02,
  membership: { gap: [30, 150], changeRate: 0.6, removeLeader: 0.3, removeLearner: 0.2, catchUpSlack: 2 },
};

/**
 * Tuned to reach Figure 8 of the Raft paper: one entry per append so an old-term entry can reach a
 * majority on its own, and leaders cut off or crashed every few ticks with elections after two, so
 * terms pile up over short, divergent logs. No snapshots, which would only hide the divergence, and
 * no membership changes, which rarely commit under such churn.
 */
export const FIGURE_EIGHT_PROFILE: FaultProfile = {
  ...DEFAULT_PROFILE,
  name: "figure-eight",
  raft: {
    ...DEFAULT_PROFILE.raft,
    electionTicks: 2,
    heartbeatTicks: 1,
    maxSizePerMsg: 1,
    maxInflightMsgs: 1,
  },
  raftVariants: {},
  clientGap: [1, 6],
  clientMix: { propose: 8, proposeBatch: 0, read: 1, transfer: 0.5 },
  leaderBias: 0.95,
  faultGap: [10, 50],
  // Isolating a leader, unlike crashing it, lets it keep appending entries of its term that no one else has.
  faultMix: {
    crash: 2,
    isolate: 6,
    oneWayCut: 1,
    dropBurst: 1,
    duplicateBurst: 0,
    delayBurst: 1,
    diskStall: 0,
    wipe: 0,
  },
  leaderFaultBias: 0.8,
  downtime: [5, 80],
  faultDuration: [10, 80],
  snapshotEvery: 1000,
  membership: null,
};

/**
 * Every disk lazy, and snapshots often enough, with followers down or cut off long enough, that leaders
 * keep finding a point where a follower needs a snapshot: they are answered null, wait for the copy,
 * and see it superseded by the next point while chunks are on the way.
 */
export const LAZY_SNAPSHOT_PROFILE: FaultProfile = {
  ...DEFAULT_PROFILE,
  name: "lazy-snapshots",
  faultMix: { ...DEFAULT_PROFILE.faultMix, crash: 4, isolate: 4, duplicateBurst: 0.5 },
  // Followers rather than the leader: a follower falls behind while the leader compacts.
  leaderFaultBias: 0.3,
  downtime: [40, 250],
  faultDuration: [40, 250],
  snapshotEvery: 5,
  keepAfterSnapshot: 2,
  lazySnapshots: 1,
  snapshotCopyDelay: [5, 150],
};

/**
 * The default faults, and now and then a power loss of the whole cluster: no node keeps a commit index
 * or applied state in memory, each recovers from its own disk, and snapshots and held commits must come
 * back from what was durable everywhere at once. Half the single crashes are processes killed, whose
 * last write reaches the disk though the node never sent what followed it; and a node is paused now
 * and then, waking to a backlog with its leadership or lease long gone.
 */
export const POWER_LOSS_PROFILE: FaultProfile = {
  ...DEFAULT_PROFILE,
  name: "power-loss",
  powerLossChance: 0.08,
  processCrashChance: 0.5,
  pauseChance: 0.1,
};

export const PROFILES: Readonly<Record<string, FaultProfile>> = {
  [DEFAULT_PROFILE.name]: DEFAULT_PROFILE,
  [FIGURE_EIGHT_PROFILE.name]: FIGURE_EIGHT_PROFILE,
  [LAZY_SNAPSHOT_PROFILE.name]: LAZY_SNAPSHOT_PROFILE,
  [POWER_LOSS_PROFILE.name]: POWER_LOSS_PROFILE,
};

/** The core options of one seed: the profile's, with one pick from each of its variants. */
export function tuningFor(profile: FaultProfile, random: SeededRandom): RaftTuning {
  const picked: { -readonly [K in keyof RaftTuning]: RaftTuning[K] } = { ...profile.raft };
  for (const key of Object.keys(profile.raftVariants) as (keyof RaftTuning)[]) {
    const values = profile.raftVariants[key];
    if (values !== undefined && values.length > 0) picked[key] = values[random.nextInt(values.length)]!;
  }
  const election = picked.electionTicks;
  if (election !== undefined && picked.heartbeatTicks !== undefined && picked.heartbeatTicks >= election) {
    picked.heartbeatTicks = Math.max(1, election - 1);
  }
  return picked;
}
