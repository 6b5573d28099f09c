import { closeSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { extname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { execa } from "execa";
import type { VoterResource } from "./app-model.js";
import { isForwardingVariable } from "./config-forwarding.js";
import { type ProcessRecord, recordOf } from "./process-table.js";
import { REPO_ROOT } from "./repo-layout.js";
import { SUPERVISOR_PID_VARIABLE } from "./supervision.js";
import { appendNote, logSize, openForAppend } from "./voter-log-file.js";

/** tsx's loader, resolved from this package so the voter runs from source wherever the AppHost is started. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
/** The launcher beside this module: `.ts` when run from source, `.js` from a build. */
const LAUNCHER = fileURLToPath(
  new URL(`./voter-launcher${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

export interface VoterLaunch {
  readonly voter: VoterResource;
  /** Every `KeyLoad__*` variable the voter gets: the forwarded configuration and the AppHost's wiring. */
  readonly env: Readonly<Record<string, string>>;
  /** Tie the voter's life to this process (foreground clusters and tests); otherwise it is detached for good. */
  readonly supervised: boolean;
  /** A group id of its own, so iptables can tell this voter's packets from the others' (see network-partition.ts). */
  readonly gid?: number;
}

export interface VoterExit {
  readonly code: number | null;
  readonly signal: string | null;
  /** Why the process could not be spawned at all. */
  readonly spawnError?: string;
}

export interface VoterProcess extends ProcessRecord {
  /** Where this run's lines start in the voter's log file. */
  readonly logOffset: number;
  /** Settles when the process exits; never rejects. */
  readonly exited: Promise<VoterExit>;
}

export function describeExit(exit: VoterExit): string {
  if (exit.spawnError !== undefined) return `could not be spawned: ${exit.spawnError}`;
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  return `exited with code ${exit.code}`;
}

/** The environment a voter inherits from the AppHost, without the variables the AppHost forwards itself. */
function inheritedEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !isForwardingVariable(name) && name !== SUPERVISOR_PID_VARIABLE) {
      env[name] = value;
    }
  }
  return env;
}

/**
 * Starts one voter as a process of the local machine (the `process` runtime). Its stdout and stderr go
 * straight to its log file, so the log does not depend on the AppHost staying alive. Every voter gets
 * a process group of its own: a Ctrl-C at the terminal reaches only the AppHost, which then stops the
 * voters once, gracefully, instead of each voter seeing the signal twice.
 */
export function spawnVoter(launch: VoterLaunch): VoterProcess {
  const { voter, supervised } = launch;
  mkdirSync(voter.dataDir, { recursive: true });
  const logOffset = logSize(voter.logFile);
  appendNote(
    voter.logFile,
    voter.name,
    `starting ${voter.name}${supervised ? ` supervised by AppHost pid ${process.pid}` : " detached"}`,
  );
  const fd = openForAppend(voter.logFile);
  // execa's types name only descriptors 3-9, but it hands any open descriptor to the child unchanged.
  const logFd = fd as 3;
  try {
    const child = execa(process.execPath, ["--conditions=source", "--import", TSX_LOADER, LAUNCHER], {
      cwd: REPO_ROOT,
      env: {
        ...inheritedEnvironment(),
        ...launch.env,
        ...(supervised ? { [SUPERVISOR_PID_VARIABLE]: String(process.pid) } : {}),
      },
      extendEnv: false,
      stdin: "ignore",
      stdout: logFd,
      stderr: logFd,
      detached: true,
      ipc: supervised,
      reject: false,
      ...(launch.gid === undefined ? {} : { gid: launch.gid }),
    });
    const exited = child.then(
      (result): VoterExit => {
        const spawnError =
          result.exitCode === undefined && result.signal === undefined ? result.shortMessage : undefined;
        return {
          code: result.exitCode ?? null,
          signal: result.signal ?? null,
          ...(spawnError === undefined ? {} : { spawnError }),
        };
      },
      (err: unknown): VoterExit => ({ code: null, signal: null, spawnError: String(err) }),
    );
    // A detached voter must not keep the command that started it waiting.
    if (!supervised) child.unref();
    return { ...recordOf(child.pid ?? 0), logOffset, exited };
  } finally {
    closeSync(fd);
  }
}
