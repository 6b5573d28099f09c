import {
  type AdmissionLimits,
  type AdmissionLimitsView,
  limitsView,
  type PropertyName,
  positiveInteger,
  resolveAdmissionLimits,
} from "./admission-property.js";

export const COMMAND_ADMISSION_SECTION = "CommandAdmission";

const MiB = 1024 * 1024;

/** Contract section 5: the command governor's limits, in the order the status JSON lists them. */
export const COMMAND_ADMISSION_PROPERTIES = [
  positiveInteger("MaxCommands", 256),
  positiveInteger("MaxRetainedBytes", 128 * MiB),
  positiveInteger("MaxCommandsPerTenant", 128),
  positiveInteger("MaxCommandsPerPrincipal", 64),
  positiveInteger("ControlMaxCommands", 16),
  positiveInteger("ControlMaxRetainedBytes", 2 * MiB),
  positiveInteger("ControlMaxCommandsPerTenant", 8),
  positiveInteger("ControlMaxCommandsPerPrincipal", 8),
  positiveInteger("ControlMaxPayloadBytes", 64 * 1024),
  positiveInteger("MaxConsecutiveControl", 8),
] as const;

export type CommandAdmissionProperty = PropertyName<typeof COMMAND_ADMISSION_PROPERTIES>;
export type CommandAdmissionLimits = AdmissionLimits<CommandAdmissionProperty>;
export type CommandAdmissionLimitsView = AdmissionLimitsView<CommandAdmissionProperty>;
/** Any subset of the limits, as numbers or as configuration text. */
export type CommandAdmissionOptions = Partial<Record<CommandAdmissionProperty, number | string>>;

export function resolveCommandAdmissionOptions(options?: CommandAdmissionOptions): CommandAdmissionLimits {
  return resolveAdmissionLimits(COMMAND_ADMISSION_SECTION, COMMAND_ADMISSION_PROPERTIES, options);
}

export const COMMAND_ADMISSION_DEFAULTS: CommandAdmissionLimits = resolveCommandAdmissionOptions();

export function commandAdmissionLimitsView(limits: CommandAdmissionLimits): CommandAdmissionLimitsView {
  return limitsView(COMMAND_ADMISSION_PROPERTIES, limits);
}
