/**
 * How a supervised voter follows its AppHost: the AppHost passes its pid in this variable and keeps an
 * IPC channel open to the voter. Node cannot ask Linux for PR_SET_PDEATHSIG, so the voter watches
 * both instead: the channel closes when the AppHost dies however it dies (even by SIGKILL), and the
 * parent pid changes when the voter is re-parented. Either way the voter shuts down, so an AppHost
 * never leaves orphans. Detached voters get no such variable and outlive the command that started them.
 */
export const SUPERVISOR_PID_VARIABLE = "KEYLOAD_APPHOST_SUPERVISOR_PID";

/** How long an orphaned voter's graceful shutdown may take before it exits regardless. */
const ORPHAN_EXIT_MS = 5_000;
const PARENT_POLL_MS = 250;

export function watchSupervisor(env: NodeJS.ProcessEnv): void {
  const supervisor = Number(env[SUPERVISOR_PID_VARIABLE]);
  // The voter refuses settings it does not know, and this one is the launcher's alone.
  delete env[SUPERVISOR_PID_VARIABLE];
  if (!Number.isInteger(supervisor) || supervisor <= 0) return;

  let orphaned = false;
  const onOrphaned = (): void => {
    if (orphaned) return;
    orphaned = true;
    // The voter's own SIGTERM handler shuts it down gracefully; the timer bounds how long that may take.
    setTimeout(() => process.exit(1), ORPHAN_EXIT_MS).unref();
    process.kill(process.pid, "SIGTERM");
  };
  if (process.ppid !== supervisor) {
    onOrphaned();
    return;
  }
  process.on("disconnect", onOrphaned);
  process.channel?.unref();
  setInterval(() => {
    if (process.ppid !== supervisor) onOrphaned();
  }, PARENT_POLL_MS).unref();
}
