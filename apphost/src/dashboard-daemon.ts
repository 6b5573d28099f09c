/**
 * The process `up --detach` leaves serving a detached cluster's dashboard (detached-dashboard.ts starts
 * it): the foreground AppHost's dashboard for one state dir, with no cluster of its own in memory (each
 * action loads the recorded one, as a CLI command does). It tells `up` over IPC that it serves, or why it
 * cannot, and leaves on SIGTERM (`down`, a later `up`), once the state no longer records it, or once none
 * of its voters has run for a while (dashboard-lifetime.ts). Its stdout and stderr are its log file.
 * Not a CLI command: only `up --detach` runs it.
 */
import { buildAppModel, defaultPorts, stateDirPaths } from "./app-model.js";
import { AppHostCluster } from "./apphost-cluster.js";
import { AppHostError } from "./apphost-errors.js";
import { type DashboardReport, parseLaunch } from "./dashboard-daemon-protocol.js";
import { watchDashboardLifetime } from "./dashboard-lifetime.js";
import { type Dashboard, serveDashboard } from "./dashboard-server.js";
import { dashboardSourceOf } from "./dashboard-source.js";
import { STOP_SIGNALS } from "./interruption.js";
import { recordOf } from "./process-table.js";

const LIFETIME_POLL_MS = 1_000;
/** How long closing may take before the process exits regardless (an event stream that will not end). */
const CLOSE_GRACE_MS = 5_000;

function note(message: string): void {
  process.stdout.write(`${new Date().toISOString()} dashboard (pid ${process.pid}): ${message}\n`);
}

/** Resolves once the message is sent: an exit before then would lose it. */
function report(message: DashboardReport): Promise<void> {
  // Started by hand, or after `up` died, there is nobody to tell; the log says it all the same.
  if (!process.send || !process.connected) return Promise.resolve();
  return new Promise((resolve) => {
    // With a callback a channel closed meanwhile is an error passed here, not an unhandled event.
    process.send?.(message, undefined, {}, (err) => {
      if (err) note(`could not tell \`up\`: ${err.message}`);
      // `up` goes once told; the channel must not hold this process's event loop or end it.
      process.channel?.unref();
      resolve();
    });
  });
}

const launch = parseLaunch(process.argv.slice(2));
// Only the paths of the model are used (the logs, the admin key file), which the ports do not change.
const model = buildAppModel(launch.stateDir, defaultPorts());
let dashboard: Dashboard;
try {
  dashboard = await serveDashboard(
    dashboardSourceOf(model, async () => (await AppHostCluster.load(launch.stateDir)).cluster),
    { port: launch.port },
  );
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  note(`cannot serve: ${message}`);
  await report({ kind: "failed", code: err instanceof AppHostError ? err.code : "AppHostInternal", message });
  process.exit(1);
}
note(`serving ${dashboard.url} for ${model.stateDir}`);
await report({ kind: "serving", url: dashboard.url });

let leaving = false;
const leave = (why: string): void => {
  if (leaving) return;
  leaving = true;
  note(`stopping: ${why}`);
  stopWatching();
  setTimeout(() => process.exit(0), CLOSE_GRACE_MS).unref();
  void dashboard.close().then(() => process.exit(0));
};
const stopWatching = watchDashboardLifetime({
  stateFile: stateDirPaths(launch.stateDir).stateFile,
  self: recordOf(process.pid),
  starter: launch.starter,
  idleExitMs: launch.idleExitMs,
  pollMs: LIFETIME_POLL_MS,
  onLeave: leave,
});
for (const signal of STOP_SIGNALS) process.on(signal, () => leave(`${signal} received`));
