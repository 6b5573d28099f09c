export * from "./admission-errors.js";
export type {
  AdmissionLimits,
  AdmissionLimitsView,
  AdmissionProperty,
  PropertyName,
} from "./admission-property.js";
export { AdmissionRefusal } from "./admission-refusal.js";
export { type AdmissionStatus, admissionStatus } from "./admission-status.js";
export { BodyGuard } from "./body-guard.js";
export {
  CommandAdmissionGovernor,
  type CommandAdmissionRequest,
  type CommandAdmissionStatus,
  type CommandScopeStatus,
} from "./command-admission-governor.js";
export {
  COMMAND_ADMISSION_DEFAULTS,
  COMMAND_ADMISSION_PROPERTIES,
  COMMAND_ADMISSION_SECTION,
  type CommandAdmissionLimits,
  type CommandAdmissionLimitsView,
  type CommandAdmissionOptions,
  type CommandAdmissionProperty,
  commandAdmissionLimitsView,
  resolveCommandAdmissionOptions,
} from "./command-admission-options.js";
export type { CommandLaneUsage } from "./command-lane.js";
export { CommandReservation } from "./command-reservation.js";
export { CommandScheduler } from "./command-scheduler.js";
export {
  COMMAND_SCHEDULER_DEFAULTS,
  type CommandSchedulerOptions,
  type ResolvedCommandSchedulerOptions,
  resolveCommandSchedulerOptions,
  type SchedulerClock,
  SYSTEM_CLOCK,
} from "./command-scheduler-options.js";
export {
  COMMAND_STAGES,
  type CommandStage,
  CommandStageMetrics,
  type CommandStageObserver,
  NO_STAGE_OBSERVER,
} from "./command-stages.js";
export {
  HttpAdmissionGovernor,
  type HttpAdmissionRequest,
  type HttpAdmissionStatus,
  type HttpScopeStatus,
} from "./http-admission-governor.js";
export {
  HTTP_ADMISSION_PROPERTIES,
  HTTP_ADMISSION_SECTION,
  type HttpAdmissionLimits,
  type HttpAdmissionLimitsView,
  type HttpAdmissionOptions,
  type HttpAdmissionProperty,
  httpAdmissionLimitsView,
  resolveHttpAdmissionOptions,
} from "./http-admission-options.js";
export type { HttpPoolUsage, HttpRequestKind, SlotWait } from "./http-pool.js";
export { HttpReservation } from "./http-reservation.js";
export {
  ENVELOPE_OVERHEAD_BYTES,
  modeledBytes,
  type PayloadSize,
  payloadSize,
  retainedBytes,
  utf8ByteLength,
} from "./payload-accounting.js";
export type { CommandOutcome, ReplicationTarget } from "./replication-target.js";
