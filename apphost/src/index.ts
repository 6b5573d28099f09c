/**
 * `@keyload/apphost`: the local orchestrator behind `pnpm apphost`, for programs that start and stop
 * clusters themselves. Tests want `@keyload/apphost/testing`.
 */
export {
  type AppModel,
  buildAppModel,
  defaultPorts,
  VOTER_NAMES,
  type VoterName,
  type VoterResource,
} from "./app-model.js";
export { AppHostCluster } from "./apphost-cluster.js";
export { APPHOST_DEFAULTS } from "./apphost-defaults.js";
export * from "./apphost-errors.js";
export { currentLeader, type VoterTarget } from "./cluster-leader.js";
export { healCluster, partitionCluster } from "./cluster-partition.js";
export { type ClusterSetup, prepareCluster } from "./cluster-setup.js";
export { type ClusterStatus, clusterStatus, type VoterStatus } from "./cluster-status.js";
export { type ForwardedConfig, forwardConfig, readForwardedConfig } from "./config-forwarding.js";
export { transferLeader } from "./leader-transfer.js";
export { clusterAdmission, type VoterAdmission } from "./voter-admission.js";
export { type VoterRuntime, voterRuntimeOf } from "./voter-runtime.js";
