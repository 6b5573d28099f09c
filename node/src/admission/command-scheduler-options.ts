import { AdmissionOptionError } from "./admission-errors.js";
import { COMMAND_ADMISSION_DEFAULTS } from "./command-admission-options.js";
import { type CommandStageObserver, NO_STAGE_OBSERVER } from "./command-stages.js";

/** Time as the scheduler sees it; tests inject a manual one. */
export interface SchedulerClock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Calls `callback` once after `delayMs`; the returned function cancels it. */
  schedule(callback: () => void, delayMs: number): () => void;
}

export const SYSTEM_CLOCK: SchedulerClock = {
  now: () => performance.now(),
  schedule: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    return () => clearTimeout(timer);
  },
};

export interface CommandSchedulerOptions {
  /** `KeyLoad:CommandAdmission:MaxConsecutiveControl`. */
  readonly maxConsecutiveControl?: number;
  /** `KeyLoad:Raft:ReplicationDeadlineMs`: how long an active unit may take before UnknownWriteOutcome. */
  readonly replicationDeadlineMs?: number;
  /** Most commands handed on as one unit. */
  readonly maxBatchCommands?: number;
  /** Most retained bytes (payload accounting) in one unit; a single larger command still goes alone. */
  readonly maxBatchBytes?: number;
  /**
   * Most retained bytes of data commands in a unit that holds a control command. A control command is
   * answered only once its whole unit has replicated and applied, so the data riding with it is kept small.
   */
  readonly maxDataBytesWithControl?: number;
  readonly clock?: SchedulerClock;
  /** Told each command's `queue`, `replicate` and `apply` times. */
  readonly stages?: CommandStageObserver;
}

export type ResolvedCommandSchedulerOptions = Required<CommandSchedulerOptions>;

export const COMMAND_SCHEDULER_DEFAULTS = {
  maxConsecutiveControl: COMMAND_ADMISSION_DEFAULTS.MaxConsecutiveControl,
  replicationDeadlineMs: 10_000,
  // As many as the data lane admits by default: one unit is active at a time, so a unit's fixed cost
  // (two fsyncs and a round trip) is spread over more commands (docs/decisions/0013-pipelined-units.md).
  maxBatchCommands: 256,
  maxBatchBytes: 16 * 1024 * 1024,
  // About four 64 KiB values: a control command's unit stays short under a flood of large writes
  // while a unit of data alone still carries many (docs/decisions/0022-small-units-for-control.md).
  maxDataBytesWithControl: 1024 * 1024,
  clock: SYSTEM_CLOCK,
  stages: NO_STAGE_OBSERVER,
} as const satisfies ResolvedCommandSchedulerOptions;

export function resolveCommandSchedulerOptions(
  options: CommandSchedulerOptions = {},
): ResolvedCommandSchedulerOptions {
  const d = COMMAND_SCHEDULER_DEFAULTS;
  const resolved: ResolvedCommandSchedulerOptions = {
    maxConsecutiveControl: options.maxConsecutiveControl ?? d.maxConsecutiveControl,
    replicationDeadlineMs: options.replicationDeadlineMs ?? d.replicationDeadlineMs,
    maxBatchCommands: options.maxBatchCommands ?? d.maxBatchCommands,
    maxBatchBytes: options.maxBatchBytes ?? d.maxBatchBytes,
    maxDataBytesWithControl: options.maxDataBytesWithControl ?? d.maxDataBytesWithControl,
    clock: options.clock ?? d.clock,
    stages: options.stages ?? d.stages,
  };
  const counts = [
    "maxConsecutiveControl",
    "replicationDeadlineMs",
    "maxBatchCommands",
    "maxBatchBytes",
    "maxDataBytesWithControl",
  ] as const;
  for (const key of counts) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new AdmissionOptionError(`CommandSchedulerOptions.${key}`, value, "a positive integer");
  }
  return resolved;
}
