import { closeSync, mkdirSync } from "node:fs";
import { execa } from "execa";
import { isForwardingVariable } from "./config-forwarding.js";
import { recordOf } from "./process-table.js";
import { REPO_ROOT } from "./repo-layout.js";
import { isSupervisionVariable, supervisionEnvironment } from "./supervision.js";
import { voterNodeArgs } from "./voter-build.js";
import { appendNote, logSize, openForAppend } from "./voter-log-file.js";
import type { VoterExit, VoterLaunch, VoterProcess, VoterRuntime } from "./voter-runtime.js";

/** The environment a voter inherits from the AppHost, without the variables the AppHost forwards itself. */
function inheritedEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !isForwardingVariable(name) && !isSupervisionVariable(name)) {
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
function spawnVoter(launch: VoterLaunch, nodeArgs: readonly string[]): VoterProcess {
  const { voter, supervised } = launch;
  // The voter keeps its data private (0700) and warns about a directory others may read.
  mkdirSync(voter.dataDir, { recursive: true, mode: 0o700 });
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
    const child = execa(process.execPath, nodeArgs, {
      cwd: REPO_ROOT,
      env: {
        ...inheritedEnvironment(),
        ...launch.env,
        ...(supervised ? supervisionEnvironment() : {}),
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

/** The `process` runtime: every voter a child process of this machine, running the tree's sources. */
export const processRuntime: VoterRuntime = {
  kind: "process",
  start: async (launch) => spawnVoter(launch, await voterNodeArgs()),
  removeLeftovers: async () => {},
};
