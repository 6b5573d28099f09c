import { closeSync } from "node:fs";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import type { AppModel } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import {
  DashboardAssetsError,
  DashboardProcessError,
  PortInUseError,
  StateDirError,
} from "./apphost-errors.js";
import { type DashboardRecord, isStateRunning, readState, writeState } from "./apphost-state.js";
import {
  type DashboardLaunch,
  type DashboardReport,
  isDashboardReport,
  launchArgs,
} from "./dashboard-daemon-protocol.js";
import { DASHBOARD_PORT_REMEDY } from "./dashboard-port.js";
import {
  isAlive,
  isSameProcess,
  type ProcessRecord,
  recordOf,
  signalProcess,
  waitForExit,
} from "./process-table.js";
import { REPO_ROOT } from "./repo-layout.js";
import { entryNodeArgs } from "./voter-build.js";
import { lastLines, logSize, openForAppend } from "./voter-log-file.js";

/**
 * A detached cluster's dashboard: `up --detach` leaves no AppHost process behind, so it starts one
 * process of its own for the dashboard (dashboard-daemon.ts), detached as the voters are, and records it
 * in the state as it records them (pid and start time). `status` reports its URL while it lives, `down`
 * stops it with the voters, and it leaves by itself once its voters are gone (dashboard-lifetime.ts).
 */

/** Where the dashboard process writes (its stdout and stderr), beside the voters' logs. */
export function dashboardLogFile(model: AppModel): string {
  return join(model.logDir, "dashboard.log");
}

/** The report the dashboard process sends, or DashboardProcessError if it ends or stalls first. */
function firstReport(child: ResultPromise, logFile: string, logOffset: number): Promise<DashboardReport> {
  const failure = (what: string): DashboardProcessError => {
    const lines = lastLines(logFile, APPHOST_DEFAULTS.failureLogLines, logOffset);
    return new DashboardProcessError(
      [`the dashboard process ${what}; its log is ${logFile}`, ...lines.map((l) => `  ${l}`)].join("\n"),
    );
  };
  return new Promise<DashboardReport>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(failure(`did not start serving within ${APPHOST_DEFAULTS.dashboardStartTimeoutMs} ms`));
    }, APPHOST_DEFAULTS.dashboardStartTimeoutMs);
    child.on("message", (message: unknown) => {
      if (!isDashboardReport(message)) return;
      clearTimeout(timer);
      resolve(message);
    });
    void child.then((result) => {
      clearTimeout(timer);
      const why = result.exitCode === undefined ? result.shortMessage : undefined;
      reject(failure(why ?? `exited (${result.exitCode ?? result.signal}) before it served`));
    });
  });
}

/** What a failed report means to `up`: the same error a foreground AppHost's dashboard would throw. */
function reportedError(report: DashboardReport & { kind: "failed" }, port: number, logFile: string): Error {
  if (report.code === "AppHostDashboardAssets") return new DashboardAssetsError(report.message);
  if (report.code === "AppHostPortInUse") {
    return new PortInUseError(port, APPHOST_DEFAULTS.host, "dashboard", DASHBOARD_PORT_REMEDY);
  }
  return new DashboardProcessError(
    `the dashboard process cannot serve: ${report.message} [${report.code}]; its log is ${logFile}`,
  );
}

/**
 * Starts the dashboard process for the cluster in `model`'s state dir on `port` (0: any free one) and
 * waits until it serves. Throws DashboardAssetsError (the page is not built), PortInUseError or
 * DashboardProcessError; the process is gone then. The caller records what it returns.
 */
export async function startDetachedDashboard(model: AppModel, port: number): Promise<DashboardRecord> {
  const logFile = dashboardLogFile(model);
  const launch: DashboardLaunch = {
    stateDir: model.stateDir,
    port,
    starter: recordOf(process.pid),
    idleExitMs: APPHOST_DEFAULTS.dashboardIdleExitMs,
  };
  const nodeArgs = await entryNodeArgs("dashboard-daemon.js");
  const logOffset = logSize(logFile);
  const fd = openForAppend(logFile);
  // execa's types name only descriptors 3-9, but it hands any open descriptor to the child unchanged.
  const logFd = fd as 3;
  try {
    const child = execa(process.execPath, [...nodeArgs, ...launchArgs(launch)], {
      cwd: REPO_ROOT,
      stdin: "ignore",
      stdout: logFd,
      stderr: logFd,
      // Its own process group and session, as a detached voter's: the terminal's Ctrl-C is not for it.
      detached: true,
      ipc: true,
      reject: false,
    });
    try {
      const report = await firstReport(child, logFile, logOffset);
      if (report.kind === "failed") throw reportedError(report, port, logFile);
      return { ...recordOf(child.pid ?? 0), url: report.url };
    } finally {
      // Told once; from here on it must not keep `up` waiting.
      if (child.connected) child.disconnect();
      child.unref();
    }
  } finally {
    closeSync(fd);
  }
}

/** SIGTERM, then SIGKILL after the grace period; false when the process was gone already. */
async function stopProcess(record: ProcessRecord): Promise<boolean> {
  if (!signalProcess(record, "SIGTERM")) return false;
  // A paused process acts on SIGTERM only once resumed.
  signalProcess(record, "SIGCONT");
  if (!(await waitForExit(record, APPHOST_DEFAULTS.stopGraceMs))) {
    signalProcess(record, "SIGKILL");
    await waitForExit(record, APPHOST_DEFAULTS.stopGraceMs);
  }
  return true;
}

/**
 * Stops the dashboard process recorded in `stateFile`, if it still runs, and clears its record. Says
 * whether one was running.
 */
export async function stopDetachedDashboard(stateFile: string): Promise<boolean> {
  const recorded = readState(stateFile)?.dashboard;
  if (!recorded) return false;
  const stopped = await stopProcess(recorded);
  // Read again: the state may have changed while it stopped; only its own record goes.
  const state = readState(stateFile);
  if (state?.dashboard && isSameProcess(state.dashboard, recorded)) {
    writeState(stateFile, { ...state, dashboard: null });
  }
  return stopped;
}

/**
 * A dashboard process left by an earlier detached cluster whose voters are all gone (killed by hand)
 * lives on for a while (dashboard-lifetime.ts). A new `up` stops it rather than run beside it, so no
 * two ever serve one state dir and the port it holds is free again. A cluster still running is left
 * alone, and said to run: `up` refuses to start over it anyway.
 */
export async function stopLeftoverDashboard(
  stateFile: string,
): Promise<{ readonly clusterRunning: boolean }> {
  let state: ReturnType<typeof readState>;
  try {
    state = readState(stateFile);
  } catch (err) {
    // `up` reports a state file it cannot read; one that cannot be read records no dashboard to stop.
    if (err instanceof StateDirError) return { clusterRunning: false };
    throw err;
  }
  if (state !== undefined && isStateRunning(state)) return { clusterRunning: true };
  if (state?.dashboard && isAlive(state.dashboard)) await stopDetachedDashboard(stateFile);
  return { clusterRunning: false };
}
