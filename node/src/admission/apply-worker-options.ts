import { AdmissionOptionError } from "./admission-errors.js";
import { COMMAND_ADMISSION_DEFAULTS } from "./command-admission-options.js";
import { type CommandStageObserver, NO_STAGE_OBSERVER } from "./command-stages.js";

/** Time as the worker sees it; tests inject a manual one. */
export interface WorkerClock {
  /** Milliseconds on a monotonic clock. */
  now(): number;
  /** Calls `callback` once after `delayMs`; the returned function cancels it. */
  schedule(callback: () => void, delayMs: number): () => void;
}

export const SYSTEM_CLOCK: WorkerClock = {
  now: () => performance.now(),
  schedule: (callback, delayMs) => {
    const timer = setTimeout(callback, delayMs);
    return () => clearTimeout(timer);
  },
};

export interface ApplyWorkerOptions {
  /** `KeyLoad:CommandAdmission:MaxConsecutiveControl`. */
  readonly maxConsecutiveControl?: number;
  /** `KeyLoad:Raft:ReplicationDeadlineMs`: how long an active unit may take before UnknownWriteOutcome. */
  readonly replicationDeadlineMs?: number;
  /** Most commands handed on as one unit. */
  readonly maxBatchCommands?: number;
  /** Most retained bytes (payload accounting) in one unit; a single larger command still goes alone. */
  readonly maxBatchBytes?: number;
  readonly clock?: WorkerClock;
  /** Told each command's `queue`, `replicate` and `apply` times. */
  readonly stages?: CommandStageObserver;
}

export type ResolvedApplyWorkerOptions = Required<ApplyWorkerOptions>;

export const APPLY_WORKER_DEFAULTS = {
  maxConsecutiveControl: COMMAND_ADMISSION_DEFAULTS.MaxConsecutiveControl,
  replicationDeadlineMs: 10_000,
  // As many as the data lane admits by default: one unit is active at a time, so a unit's fixed cost
  // (two fsyncs and a round trip) is spread over more commands; at 256 writers this measured about 10 %
  // more writes/s than 64 with the same latency at lower concurrency.
  maxBatchCommands: 256,
  maxBatchBytes: 16 * 1024 * 1024,
  clock: SYSTEM_CLOCK,
  stages: NO_STAGE_OBSERVER,
} as const satisfies ResolvedApplyWorkerOptions;

export function resolveApplyWorkerOptions(options: ApplyWorkerOptions = {}): ResolvedApplyWorkerOptions {
  const d = APPLY_WORKER_DEFAULTS;
  const resolved: ResolvedApplyWorkerOptions = {
    maxConsecutiveControl: options.maxConsecutiveControl ?? d.maxConsecutiveControl,
    replicationDeadlineMs: options.replicationDeadlineMs ?? d.replicationDeadlineMs,
    maxBatchCommands: options.maxBatchCommands ?? d.maxBatchCommands,
    maxBatchBytes: options.maxBatchBytes ?? d.maxBatchBytes,
    clock: options.clock ?? d.clock,
    stages: options.stages ?? d.stages,
  };
  const counts = [
    "maxConsecutiveControl",
    "replicationDeadlineMs",
    "maxBatchCommands",
    "maxBatchBytes",
  ] as const;
  for (const key of counts) {
    const value = resolved[key];
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new AdmissionOptionError(`ApplyWorkerOptions.${key}`, value, "a positive integer");
  }
  return resolved;
}
