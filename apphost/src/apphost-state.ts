import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { isVoterName, VOTER_NAMES, type VoterName, type VoterPorts } from "./app-model.js";
import { StateDirError } from "./apphost-errors.js";
import { isAlive, isProcessRecord, type ProcessRecord } from "./process-table.js";
import { isRuntimeKind, type RuntimeKind } from "./runtime-kind.js";
import { isVoterFailure, type VoterFailure } from "./voter-failure.js";

/**
 * The AppHost's own record of a cluster, `apphost.json` in the state dir, so every later command can
 * address the cluster by `--state-dir` alone: which voters run with which pids and ports, how they were
 * started and with what forwarded configuration (never the secret or the admin key, which stay in
 * their own files).
 */
export interface VoterRecord extends VoterPorts {
  readonly name: VoterName;
  readonly forwardedEnv: Readonly<Record<string, string>>;
  readonly process: ProcessRecord | null;
  /** How the voter's last run ended when it ended on its own with a non-zero status; cleared at its next start. */
  readonly failure?: VoterFailure | null;
}

export interface OwnerRecord extends ProcessRecord {
  /** Where the foreground AppHost takes commands for its voters (control-channel.ts). */
  readonly controlSocket: string;
  /** The dashboard it serves; null (or absent, from an older AppHost) when it serves none. */
  readonly dashboardUrl?: string | null;
}

/**
 * The dashboard process a detached cluster's `up` leaves serving (detached-dashboard.ts), as its voters
 * are recorded: the pid and start time, so a reused pid is never taken for it.
 */
export interface DashboardRecord extends ProcessRecord {
  readonly url: string;
}

export interface AppHostState {
  readonly version: 1;
  readonly runtime: RuntimeKind;
  /** `foreground`: an AppHost process supervises the voters; `detached`: nobody does. */
  readonly mode: "foreground" | "detached";
  readonly owner: OwnerRecord | null;
  /** The detached cluster's dashboard process; null (or absent, from an older AppHost) when none was started. */
  readonly dashboard?: DashboardRecord | null;
  readonly voters: readonly VoterRecord[];
}

function isState(value: unknown): value is AppHostState {
  const s = value as AppHostState | null;
  if (typeof s !== "object" || s === null || s.version !== 1 || !isRuntimeKind(s.runtime)) return false;
  if (s.mode !== "foreground" && s.mode !== "detached") return false;
  if (s.owner !== null && !(isProcessRecord(s.owner) && typeof s.owner.controlSocket === "string"))
    return false;
  const dashboardUrl = s.owner?.dashboardUrl;
  if (dashboardUrl !== undefined && dashboardUrl !== null && typeof dashboardUrl !== "string") return false;
  const dashboard = s.dashboard;
  if (
    dashboard !== undefined &&
    dashboard !== null &&
    !(isProcessRecord(dashboard) && typeof dashboard.url === "string")
  )
    return false;
  return (
    Array.isArray(s.voters) &&
    s.voters.length === VOTER_NAMES.length &&
    s.voters.every(
      (v) =>
        isVoterName(v.name) &&
        Number.isInteger(v.httpPort) &&
        Number.isInteger(v.peerPort) &&
        typeof v.forwardedEnv === "object" &&
        v.forwardedEnv !== null &&
        (v.process === null || isProcessRecord(v.process)) &&
        (v.failure === undefined || v.failure === null || isVoterFailure(v.failure)),
    )
  );
}

/** The recorded state, or undefined when the state dir has none. */
export function readState(stateFile: string): AppHostState | undefined {
  if (!existsSync(stateFile)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(stateFile, "utf8"));
  } catch (err) {
    // JSON's message quotes the text, line breaks and all: one line, so the error's tag ends it.
    const why = (err as Error).message.replace(/\s+/g, " ").slice(0, 200);
    throw new StateDirError(`${stateFile} cannot be read (${why}); start over with --fresh`);
  }
  if (!isState(parsed)) {
    throw new StateDirError(
      `${stateFile} is not an AppHost state file this version understands; start over with --fresh`,
    );
  }
  return parsed;
}

/** Replaces the state file atomically, so a command reading it never sees half of it. */
export function writeState(stateFile: string, state: AppHostState): void {
  mkdirSync(dirname(stateFile), { recursive: true });
  const temporary = `${stateFile}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, stateFile);
}

/** Whether the recorded foreground AppHost or any recorded voter is still alive. */
export function isStateRunning(state: AppHostState): boolean {
  return isAlive(state.owner) || state.voters.some((v) => isAlive(v.process));
}
