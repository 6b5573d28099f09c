import { readFileSync } from "node:fs";

/**
 * A process the AppHost started, as recorded in its state: the pid and the kernel's start time of
 * that pid, so a pid reused by an unrelated process after the voter died is never mistaken for it.
 */
export interface ProcessRecord {
  readonly pid: number;
  /** Field 22 of /proc/<pid>/stat; null where /proc is not available. */
  readonly startTicks: number | null;
}

export type ProcessState = "running" | "paused" | "stopped";

interface ProcStat {
  /** One letter: R, S, D, T (stopped by a signal), t, Z (zombie), X, ... */
  readonly state: string;
  readonly startTicks: number;
}

function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const startTicks = Number(fields[19]);
  return state === undefined || !Number.isFinite(startTicks) ? undefined : { state, startTicks };
}

const hasProcfs = ((): boolean => readProcStat(process.pid) !== undefined)();

/** The record of a process that has just been started. */
export function recordOf(pid: number): ProcessRecord {
  return { pid, startTicks: readProcStat(pid)?.startTicks ?? null };
}

/** Whether a value read back (a state file, a launch argument) is a process record. */
export function isProcessRecord(value: unknown): value is ProcessRecord {
  const r = value as ProcessRecord | null;
  return (
    typeof r === "object" &&
    r !== null &&
    Number.isInteger(r.pid) &&
    (r.startTicks === null || typeof r.startTicks === "number")
  );
}

/** Whether two records name the same process: the same pid started at the same time. */
export function isSameProcess(a: ProcessRecord, b: ProcessRecord): boolean {
  return a.pid === b.pid && a.startTicks === b.startTicks;
}

export function processState(record: ProcessRecord | null): ProcessState {
  // A pid of 0 or below names a process group or every process to kill(2): never a voter.
  if (record === null || record.pid <= 0) return "stopped";
  if (!hasProcfs) {
    try {
      process.kill(record.pid, 0);
      return "running";
    } catch {
      return "stopped";
    }
  }
  const stat = readProcStat(record.pid);
  if (stat === undefined) return "stopped";
  if (record.startTicks !== null && stat.startTicks !== record.startTicks) return "stopped";
  // A zombie has exited; only its parent has not collected it yet.
  if (stat.state === "Z" || stat.state === "X") return "stopped";
  return stat.state === "T" || stat.state === "t" ? "paused" : "running";
}

export function isAlive(record: ProcessRecord | null): boolean {
  return processState(record) !== "stopped";
}

/** Sends a signal if the process is still the recorded one; false when it is gone. */
export function signalProcess(record: ProcessRecord, signal: NodeJS.Signals): boolean {
  if (!isAlive(record)) return false;
  try {
    process.kill(record.pid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw err;
  }
}

/** Resolves true once the process has exited, false if it is still alive after `timeoutMs`. */
export async function waitForExit(record: ProcessRecord, timeoutMs: number, pollMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(record)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return true;
}
