import { processState, recordOf } from "./process-table.js";

/**
 * How a supervised voter follows its AppHost: the AppHost passes its pid and the kernel's start time
 * of that pid in these variables. Node cannot ask Linux for PR_SET_PDEATHSIG, so the voter watches
 * instead: it polls whether that very process (same pid, same start time, so never a reused pid) is
 * still alive, and a voter started as a child process also keeps an IPC channel open, which closes
 * at once when the AppHost dies however it dies (even by SIGKILL). Either way the voter shuts down,
 * so an AppHost never leaves orphans. The poll is what works for a voter in a container, whose
 * parent is the container runtime's shim, not the AppHost: the container shares the host's pid
 * namespace, so the AppHost's pid is visible there. Detached voters get no such variables and
 * outlive the command that started them.
 */
const SUPERVISOR_PID_VARIABLE = "KEYLOAD_APPHOST_SUPERVISOR_PID";
const SUPERVISOR_START_VARIABLE = "KEYLOAD_APPHOST_SUPERVISOR_START";

/** How long an orphaned voter's graceful shutdown may take before it exits regardless. */
const ORPHAN_EXIT_MS = 5_000;
const SUPERVISOR_POLL_MS = 250;

export function isSupervisionVariable(name: string): boolean {
  return name === SUPERVISOR_PID_VARIABLE || name === SUPERVISOR_START_VARIABLE;
}

/** The variables that tie a voter to this process. */
export function supervisionEnvironment(): Record<string, string> {
  const self = recordOf(process.pid);
  return {
    [SUPERVISOR_PID_VARIABLE]: String(self.pid),
    ...(self.startTicks === null ? {} : { [SUPERVISOR_START_VARIABLE]: String(self.startTicks) }),
  };
}

export function watchSupervisor(env: NodeJS.ProcessEnv): void {
  const pid = Number(env[SUPERVISOR_PID_VARIABLE]);
  const start = env[SUPERVISOR_START_VARIABLE];
  // The voter refuses settings it does not know, and these are the launcher's alone.
  delete env[SUPERVISOR_PID_VARIABLE];
  delete env[SUPERVISOR_START_VARIABLE];
  if (!Number.isInteger(pid) || pid <= 0) return;
  const supervisor = { pid, startTicks: start === undefined ? null : Number(start) };

  let orphaned = false;
  const onOrphaned = (): void => {
    if (orphaned) return;
    orphaned = true;
    // The voter's own SIGTERM handler shuts it down gracefully; the timer bounds how long that may take.
    setTimeout(() => process.exit(1), ORPHAN_EXIT_MS).unref();
    process.kill(process.pid, "SIGTERM");
  };
  if (processState(supervisor) === "stopped") {
    onOrphaned();
    return;
  }
  if (process.channel) {
    process.on("disconnect", onOrphaned);
    process.channel.unref();
  }
  setInterval(() => {
    if (processState(supervisor) === "stopped") onOrphaned();
  }, SUPERVISOR_POLL_MS).unref();
}
