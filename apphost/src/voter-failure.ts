import { lastLines } from "./voter-log-file.js";

/**
 * A voter that ended on its own with a non-zero status, as a voter does when its storage or apply
 * fails (fail-stop): `status` shows it as `failed` with this, until the voter is started again.
 */
export interface VoterFailure {
  /** How it ended, e.g. `exited with code 3`. */
  readonly exit: string;
  /** When the AppHost saw it end (or the voter logged its fail-stop), ISO 8601. */
  readonly at: string;
  /** The voter's last log lines of that run, JSON lines as written. */
  readonly lastLines: readonly string[];
}

export function isVoterFailure(value: unknown): value is VoterFailure {
  const f = value as VoterFailure | null;
  return (
    typeof f === "object" &&
    f !== null &&
    typeof f.exit === "string" &&
    typeof f.at === "string" &&
    Array.isArray(f.lastLines) &&
    f.lastLines.every((line) => typeof line === "string")
  );
}

/** What the voter logs as it exits after a fail-stop (node/src/main.ts): `failStop` and `exitCode`. */
interface FailStopLine {
  readonly failStop: true;
  readonly exitCode: number;
  readonly time: number;
}

function failStopLine(line: string): FailStopLine | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return undefined;
  }
  const l = parsed as Partial<FailStopLine> | null;
  return typeof l === "object" && l !== null && l.failStop === true && typeof l.exitCode === "number"
    ? (l as FailStopLine)
    : undefined;
}

/** Whether a line is the AppHost's own note that a run of the voter starts (voter-log-file.ts). */
function isStartNote(line: string): boolean {
  try {
    const l = JSON.parse(line) as { source?: unknown; msg?: unknown };
    return l.source === "apphost" && typeof l.msg === "string" && l.msg.startsWith("starting ");
  } catch {
    return false;
  }
}

/**
 * The fail-stop the voter's last run logged, if it did: for a voter no AppHost process saw exit (a
 * detached cluster's), whose exit status is lost. Only the last `count` lines are read.
 */
export function loggedFailStop(logFile: string, count: number): VoterFailure | null {
  const lines = lastLines(logFile, count);
  const start = lines.findLastIndex(isStartNote);
  const run = lines.slice(start + 1);
  for (const line of run) {
    const failStop = failStopLine(line);
    if (failStop !== undefined) {
      return {
        exit: `exited with code ${failStop.exitCode}`,
        at: new Date(failStop.time).toISOString(),
        lastLines: run,
      };
    }
  }
  return null;
}
