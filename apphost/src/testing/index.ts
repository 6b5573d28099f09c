/**
 * `@keyload/apphost/testing`: real three-voter clusters for integration tests, the analogue of
 * Aspire.Hosting.Testing. `startCluster()` in a test (or beforeAll), `dispose()` in afterEach.
 */
export { VOTER_NAMES, type VoterName } from "../app-model.js";
export {
  AppHostError,
  PartitionFailedError,
  PartitionUnavailableError,
  ReadinessTimeoutError,
  VoterStartError,
  VoterStateError,
} from "../apphost-errors.js";
export type { VoterState } from "../cluster-status.js";
export type { Dashboard } from "../dashboard-server.js";
export { RUNTIME_KINDS, type RuntimeKind } from "../runtime-kind.js";
export { testcontainersUnavailableReason as containerRuntimeUnavailableReason } from "../testcontainers-engine.js";
export type { VoterFailure } from "../voter-failure.js";
export { ClusterDisposedError } from "./cluster-disposed-error.js";
export { dumpLogsOnFailure, type FailureHookContext, type LogSource } from "./failure-logs.js";
export {
  linksBetween,
  partitionsUnavailable,
  partitionUnavailableReason,
  type VoterLink,
} from "./network-partition.js";
export {
  type ShownKey,
  type StartClusterOptions,
  startCluster,
  type TenantFixture,
  type TenantOptions,
  TestCluster,
  type TestVoter,
  type WaitForLeaderOptions,
} from "./test-cluster.js";
