export { EventQueue } from "./event-queue.js";
export {
  type BurstLevels,
  type ClientMix,
  DEFAULT_PROFILE,
  type FaultMix,
  type FaultProfile,
  FIGURE_EIGHT_PROFILE,
  LAZY_SNAPSHOT_PROFILE,
  type MembershipProfile,
  POWER_LOSS_PROFILE,
  PROFILES,
  type RaftTuning,
  type RaftVariants,
  type Range,
  tuningFor,
} from "./fault-profile.js";
export { type InvariantName, InvariantViolation, SAFETY_INVARIANTS, SafetyChecker } from "./invariants.js";
export { LazySnapshotStorage } from "./lazy-snapshot-storage.js";
export { changesAfter, MembershipChecker } from "./membership-invariants.js";
export {
  type LeaderView,
  MAX_VOTERS,
  type MembershipAction,
  MembershipOperator,
} from "./membership-operator.js";
export { INITIAL_VOTERS, NodeRegistry, type SimNode } from "./node-registry.js";
export { formatFailures, runSeeds, type SeedRange, type SeedsSummary } from "./run-seeds.js";
export { type DiskFaults, type DiskWrite, SimDisk } from "./sim-disk.js";
export {
  type Delivery,
  type LinkCut,
  type NetworkFaults,
  type SendOutcome,
  SimNetwork,
} from "./sim-network.js";
export { encodeCommand, SimStateMachine } from "./sim-state-machine.js";
export type { SimStats } from "./sim-stats.js";
export {
  runSeed,
  type SimOptions,
  type SimResult,
  SimulationFailure,
  Simulator,
} from "./simulator.js";
export { StateMachineStore } from "./state-machine-store.js";
export { Trace } from "./trace.js";
