import { join } from "node:path";
import { httpUrlOf, peerAddressOf, stateDirPaths, VOTER_NAMES } from "./app-model.js";
import type { AppHostCluster } from "./apphost-cluster.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { DashboardAssetsError, InterruptedError } from "./apphost-errors.js";
import type { DashboardRecord } from "./apphost-state.js";
import type { CliOptions } from "./cli-options.js";
import type { ClusterSnapshot } from "./cluster-readiness.js";
import { type PreparedCluster, prepareCluster } from "./cluster-setup.js";
import { mergeSources, readEnvFile } from "./config-forwarding.js";
import { type ControlRequest, controlSocketPath, serveControl } from "./control-channel.js";
import { DASHBOARD_PORT_REMEDY, dashboardPortFor } from "./dashboard-port.js";
import { type Dashboard, serveDashboard } from "./dashboard-server.js";
import { dashboardSourceOf } from "./dashboard-source.js";
import {
  startDetachedDashboard,
  stopDetachedDashboard,
  stopLeftoverDashboard,
} from "./detached-dashboard.js";
import { STOP_SIGNALS } from "./interruption.js";
import { followLogs } from "./log-follower.js";
import { formatLogLine, isProbeLine, paint } from "./log-line-format.js";
import { assertPortFree } from "./port-allocation.js";
import { recordOf } from "./process-table.js";
import { readinessProgress } from "./readiness-progress.js";
import { REPO_ROOT } from "./repo-layout.js";
import type { TerminalOutput } from "./terminal-output.js";
import { describeExit, voterRuntimeOf } from "./voter-runtime.js";

function endpoints(
  cluster: AppHostCluster,
  snapshot: ClusterSnapshot,
  output: TerminalOutput,
  dashboard: { readonly url: string } | null = null,
): string[] {
  const { model } = cluster;
  return [
    paint(
      `KeyLoad is ready: leader ${snapshot.leader}, term ${snapshot.term} (${(snapshot.elapsedMs / 1000).toFixed(1)} s)`,
      "\x1b[1m",
      output.colour,
    ),
    ...model.voters.map(
      (v) =>
        `  ${v.name}  ${httpUrlOf(v).padEnd(22)}  peer ${peerAddressOf(v).padEnd(16)}  data ${v.dataDir}`,
    ),
    `  admin key  ${model.adminKeyFile}`,
    `  logs       ${model.logDir}`,
    ...(dashboard === null ? [] : [`  dashboard  ${dashboard.url}`]),
    ...snapshot.newMembers.map(
      (name) =>
        `${name} lost its data and runs as a new member, not a voter yet; the others serve without it. ` +
        `It asks the leader to add it as a learner and to promote it once caught up ` +
        `(\`pnpm apphost status${stateDirOption(cluster)}\` shows it join); with ` +
        `KeyLoad__Cluster__NewMemberJoin=manual, add it with \`pnpm apphost replace ${name}${stateDirOption(cluster)}\`.`,
    ),
  ];
}

/** What a command printed for the user to run names: nothing for the default state dir. */
function stateDirOption(cluster: AppHostCluster): string {
  return cluster.model.stateDir === join(REPO_ROOT, APPHOST_DEFAULTS.stateDirName)
    ? ""
    : ` --state-dir ${cluster.model.stateDir}`;
}

/** `up`: forwards the configuration, starts the voters and waits for the cluster, in either mode. */
export async function upCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const dashboardPort = dashboardPortFor(options.dashboardPort, options.isolated);
  // A dashboard process an earlier detached cluster left behind, its voters gone, gives way to this one
  // (before `--fresh` wipes the state that records it, and before its port is checked).
  const { clusterRunning } = await stopLeftoverDashboard(stateDirPaths(options.stateDir).stateFile);
  // Before anything is prepared (`--fresh` wipes the state dir): a port in use stops `up` with nothing
  // to undo. The dashboard takes it for good only once the cluster is prepared, so this is a check.
  // Over a running cluster, whose own dashboard may hold the port, prepareCluster says what is wrong.
  if (!clusterRunning && dashboardPort !== null && dashboardPort !== 0) {
    await assertPortFree(APPHOST_DEFAULTS.host, dashboardPort, "dashboard", DASHBOARD_PORT_REMEDY);
  }
  const prepared = await prepareCluster({
    stateDir: options.stateDir,
    isolated: options.isolated,
    fresh: options.fresh,
    variables: mergeSources(readEnvFile(options.envFile), process.env).values(),
    supervised: !options.detach,
    runtime: await voterRuntimeOf(options.runtime),
  });
  return options.detach
    ? upDetached(prepared, output, dashboardPort)
    : upForeground(prepared, output, dashboardPort);
}

/** The dashboard `start` serves on `port`; without its built page the cluster runs without it. */
async function unlessUnbuilt<D>(
  port: number | null,
  output: TerminalOutput,
  start: (port: number) => Promise<D>,
): Promise<D | null> {
  if (port === null) return null;
  try {
    return await start(port);
  } catch (err) {
    if (!(err instanceof DashboardAssetsError)) throw err;
    output.error(paint(`No dashboard: ${err.message}`, "\x1b[33m", output.colour));
    return null;
  }
}

/** The foreground AppHost's dashboard on `port` (0: any free port), served by this process. */
function startDashboard(
  cluster: AppHostCluster,
  port: number | null,
  output: TerminalOutput,
): Promise<Dashboard | null> {
  return unlessUnbuilt(port, output, (p) =>
    serveDashboard(
      dashboardSourceOf(cluster.model, async () => cluster),
      { port: p },
    ),
  );
}

/**
 * A detached cluster's dashboard on `port` (0: any free port), served by a process of its own that
 * outlives this one (detached-dashboard.ts), recorded in the cluster's state.
 */
function startDashboardProcess(
  cluster: AppHostCluster,
  port: number | null,
  output: TerminalOutput,
): Promise<DashboardRecord | null> {
  return unlessUnbuilt(port, output, async (p) => {
    const record = await startDetachedDashboard(cluster.model, p);
    cluster.setDashboard(record);
    return record;
  });
}

/** Rejects on the first of STOP_SIGNALS; the handlers are removed by the returned `dispose`. */
function interruption(): { readonly interrupted: Promise<never>; dispose(): void } {
  let onSignal = (): void => {};
  const interrupted = new Promise<never>((_, reject) => {
    onSignal = () => reject(new InterruptedError("interrupted while the cluster was starting"));
  });
  interrupted.catch(() => {});
  for (const signal of STOP_SIGNALS) process.once(signal, onSignal);
  return {
    interrupted,
    dispose: () => {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    },
  };
}

async function upDetached(
  prepared: PreparedCluster,
  output: TerminalOutput,
  dashboardPort: number | null,
): Promise<number> {
  const { cluster } = prepared;
  const signals = interruption();
  try {
    // Before the voters, as in the foreground: a dashboard port taken since upCommand's check stops
    // `up` before them, and the dashboard shows them starting.
    const dashboard = await startDashboardProcess(cluster, dashboardPort, output);
    let snapshot: ClusterSnapshot;
    try {
      snapshot = await cluster.up({
        onProgress: readinessProgress(output),
        failure: signals.interrupted,
        acceptNewMembers: true,
      });
    } catch (err) {
      // The voters were stopped: their dashboard goes with them.
      if (dashboard !== null) await stopDetachedDashboard(cluster.model.stateFile);
      throw err;
    }
    output.clearStatus();
    // The cluster itself is fine when it refuses the key: its voters keep running, as after a success.
    await prepared.confirmAdminKey(snapshot, true);
    for (const line of endpoints(cluster, snapshot, output, dashboard)) output.line(line);
    output.line(`The cluster keeps running; stop it with \`pnpm apphost down${stateDirOption(cluster)}\`.`);
    return 0;
  } finally {
    output.clearStatus();
    signals.dispose();
  }
}

/**
 * The foreground AppHost: streams the voters' logs, serves debugging commands from other terminals,
 * and stops the voters gracefully on Ctrl-C (a second Ctrl-C kills them).
 */
async function upForeground(
  prepared: PreparedCluster,
  output: TerminalOutput,
  dashboardPort: number | null,
): Promise<number> {
  const { cluster } = prepared;
  // Before the voters start: a dashboard port taken since upCommand's check stops `up` before them.
  const dashboard = await startDashboard(cluster, dashboardPort, output);
  const socketPath = controlSocketPath(cluster.model.stateDir);
  let stopping: Promise<void> | undefined;
  let resolveFinished: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    resolveFinished = resolve;
  });
  let rejectStartup: (err: Error) => void = () => {};
  const startupAborted = new Promise<never>((_, reject) => {
    rejectStartup = reject;
  });
  startupAborted.catch(() => {});
  let forced = false;

  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      rejectStartup(new InterruptedError("stopped while the cluster was starting"));
      output.clearStatus();
      output.line("Stopping the voters (Ctrl-C again to kill them)...");
      await cluster.stopAll();
      resolveFinished();
    })();
    return stopping;
  };
  const onSignal = (): void => {
    if (stopping === undefined) {
      void shutdown();
      return;
    }
    forced = true;
    output.line("Killing the voters.");
    void cluster.killAll().then(resolveFinished);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  const handle = async (request: ControlRequest): Promise<string> => {
    if (request.op === "down") {
      await shutdown();
      return "the cluster stopped";
    }
    return cluster.operate(request.op, request.voter, (line) => output.line(line));
  };

  const control = await serveControl(socketPath, handle);
  cluster.setOwner({
    ...recordOf(process.pid),
    controlSocket: socketPath,
    dashboardUrl: dashboard?.url ?? null,
  });
  const follower = followLogs(
    cluster.model.voters.map((v) => ({ voter: v.name, file: v.logFile })),
    (voter, line) => {
      if (!isProbeLine(line)) output.line(formatLogLine(voter, line, output.colour));
    },
  );
  cluster.onVoterExit((voter, exit) => {
    if (stopping !== undefined) return;
    // A fail-stop's last lines have streamed by already; the state says what it means.
    const failed = cluster.failure(voter) === null ? "" : " (failed: see its last log lines above)";
    output.error(paint(`${voter} ${describeExit(exit)}${failed}`, "\x1b[31m", output.colour));
  });

  try {
    const snapshot = await cluster.up({
      onProgress: readinessProgress(output),
      failure: startupAborted,
      acceptNewMembers: true,
    });
    output.clearStatus();
    try {
      await prepared.confirmAdminKey(snapshot, false);
    } catch (err) {
      // The voters die with this AppHost anyway: stopped gracefully rather than left to that.
      await cluster.stopAll();
      throw err;
    }
    for (const line of endpoints(cluster, snapshot, output, dashboard)) output.line(line);
    output.line(
      `Press Ctrl-C to stop. Debug from another terminal: pnpm apphost status${stateDirOption(cluster)} | ` +
        `stop ${VOTER_NAMES[0]} | ...`,
    );
    await finished;
    return forced ? 130 : 0;
  } catch (err) {
    // A stop requested during startup is not a failure of the cluster.
    if (stopping !== undefined) {
      await finished;
      return forced ? 130 : 0;
    }
    throw err;
  } finally {
    output.clearStatus();
    follower.stop();
    await dashboard?.close();
    await control.close();
    cluster.setOwner(null);
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
  }
}
