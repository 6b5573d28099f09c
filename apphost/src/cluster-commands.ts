import { existsSync } from "node:fs";
import { formatAdmission } from "./admission-format.js";
import { buildAppModel, defaultPorts, stateDirPaths } from "./app-model.js";
import { AppHostCluster } from "./apphost-cluster.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { AdmissionUnavailableError, MissingAdminKeyError, NoClusterError } from "./apphost-errors.js";
import { type OwnerRecord, readState } from "./apphost-state.js";
import type { CliOptions } from "./cli-options.js";
import { resolveVoter, type VoterTarget } from "./cluster-leader.js";
import { healCluster, partitionCluster, removeClusterPartition } from "./cluster-partition.js";
import { clusterStatus, formatStatus } from "./cluster-status.js";
import { sendControl, type VoterOperation } from "./control-channel.js";
import { stopDetachedDashboard } from "./detached-dashboard.js";
import { pause, untilInterrupted } from "./interruption.js";
import { transferLeader } from "./leader-transfer.js";
import { followLogs } from "./log-follower.js";
import { formatLogLine, isProbeLine } from "./log-line-format.js";
import { type LogSelection, mergedLines, selectLog } from "./log-selection.js";
import { isAlive, waitForExit } from "./process-table.js";
import type { TerminalOutput } from "./terminal-output.js";
import { clusterAdmission } from "./voter-admission.js";

/** Long enough for a restart: a graceful stop, then a start. */
const CONTROL_TIMEOUT_MS = APPHOST_DEFAULTS.stopGraceMs * 2 + APPHOST_DEFAULTS.startTimeoutMs;
/** A replacement also waits for the new member to catch up. */
const REPLACE_TIMEOUT_MS = CONTROL_TIMEOUT_MS + APPHOST_DEFAULTS.readinessTimeoutMs;

/** The foreground AppHost of the cluster in `stateDir`, if one is alive to take commands. */
function foregroundOwner(stateDir: string): OwnerRecord | undefined {
  const state = readState(stateDirPaths(stateDir).stateFile);
  return state?.owner && isAlive(state.owner) ? state.owner : undefined;
}

export async function downCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const owner = foregroundOwner(options.stateDir);
  if (owner) {
    output.line(await sendControl(owner.controlSocket, { op: "down" }, CONTROL_TIMEOUT_MS));
    await waitForExit(owner, APPHOST_DEFAULTS.stopGraceMs);
    return 0;
  }
  const { stateFile } = stateDirPaths(options.stateDir);
  const state = readState(stateFile);
  if (!state?.voters.some((v) => isAlive(v.process))) {
    // Voters that died on their own leave their partition behind, and their dashboard for a while.
    if (state) await removeClusterPartition(buildAppModel(options.stateDir, state.voters));
    const dashboard = await stopDetachedDashboard(stateFile);
    output.line(`No cluster is running in ${options.stateDir}${dashboard ? "; its dashboard stopped" : ""}.`);
    return 0;
  }
  const { cluster } = await AppHostCluster.load(options.stateDir);
  await cluster.stopAll();
  // After the voters, whose records the cluster writes back with the dashboard's.
  await stopDetachedDashboard(stateFile);
  output.line("The cluster stopped.");
  return 0;
}

export async function statusCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  if (options.json) {
    output.line(JSON.stringify(await clusterStatus(options.stateDir), null, 2));
    return 0;
  }
  if (!options.watch) {
    output.line(await statusTable(options.stateDir));
    return 0;
  }
  const every = APPHOST_DEFAULTS.watchIntervalMs;
  await untilInterrupted(async (interruption) => {
    while (!interruption.interrupted) {
      const started = Date.now();
      const table = await statusTable(options.stateDir);
      if (interruption.interrupted) return;
      output.screen(
        `Every ${every / 1000} s: pnpm apphost status  ${new Date(started).toISOString()}\n\n${table}`,
      );
      await pause(every - (Date.now() - started), interruption);
    }
  });
  return 0;
}

/** `status` for a person: the status table with each running voter's admission usage. */
async function statusTable(stateDir: string): Promise<string> {
  const [status, admission] = await Promise.all([
    clusterStatus(stateDir),
    // A state dir without a cluster has no admin key to ask with, and nothing to ask; without its key,
    // the table still shows what needs none.
    clusterAdmission(stateDir).catch((err: unknown) => {
      if (err instanceof NoClusterError || err instanceof MissingAdminKeyError) return [];
      throw err;
    }),
  ]);
  return formatStatus(status, admission);
}

/** `admission [voterN] [--json]`: each voter's admission status, or the voters' own answers. */
export async function admissionCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const only = options.voter === undefined ? undefined : await resolveVoter(options.stateDir, options.voter);
  const entries = await clusterAdmission(options.stateDir, only);
  const silent = entries.filter((e) => e.admission === null);
  if (options.json) {
    if (only === undefined) {
      output.line(JSON.stringify(Object.fromEntries(entries.map((e) => [e.name, e.admission])), null, 2));
    } else if (silent.length === 0) {
      output.line(JSON.stringify(entries[0]!.admission, null, 2));
    }
  } else {
    output.line(formatAdmission(entries));
  }
  // What the other voters said is shown first; a voter that did not answer still fails the command.
  if (silent.length > 0) {
    throw new AdmissionUnavailableError(silent.map((e) => `${e.name}: ${e.error}`).join("\n"));
  }
  return 0;
}

export async function transferLeaderCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  // parseCli guarantees a voter.
  const voter = await resolveVoter(options.stateDir, options.voter!);
  output.line(await transferLeader(options.stateDir, voter));
  return 0;
}

export async function partitionCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  // parseCli guarantees the groups.
  output.line(await partitionCluster(options.stateDir, options.groups!));
  return 0;
}

export async function healCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  output.line(await healCluster(options.stateDir));
  return 0;
}

/** A voter operation, done by the foreground AppHost when there is one, so a started voter dies with it. */
export async function voterCommand(
  operation: VoterOperation,
  target: VoterTarget,
  options: CliOptions,
  output: TerminalOutput,
): Promise<number> {
  const voter = await resolveVoter(options.stateDir, target);
  const owner = foregroundOwner(options.stateDir);
  if (owner) {
    const timeoutMs = operation === "replace" ? REPLACE_TIMEOUT_MS : CONTROL_TIMEOUT_MS;
    output.line(await sendControl(owner.controlSocket, { op: operation, voter }, timeoutMs));
    return 0;
  }
  const { cluster } = await AppHostCluster.load(options.stateDir);
  output.line(await cluster.operate(operation, voter, (line) => output.line(line)));
  return 0;
}

export async function logsCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const paths = stateDirPaths(options.stateDir);
  // A mistyped state dir is named, rather than answered with no lines as an idle cluster's would be.
  if (!existsSync(paths.stateDir)) {
    throw new NoClusterError(`there is no state dir ${paths.stateDir} (run \`up\` first, or name another)`);
  }
  const state = readState(paths.stateFile);
  const model = buildAppModel(options.stateDir, state?.voters ?? defaultPorts());
  const only = options.voter === undefined ? undefined : await resolveVoter(options.stateDir, options.voter);
  const voters = model.voters.filter((v) => only === undefined || v.name === only);
  const selection: LogSelection = {
    shown: (line) => options.raw || !isProbeLine(line),
    ...(options.tail === undefined ? {} : { tail: options.tail }),
    ...(options.sinceMs === undefined ? {} : { notBefore: Date.now() - options.sinceMs }),
  };
  const show = (voter: string, line: string): void =>
    output.line(options.raw ? line : formatLogLine(voter, line, output.colour));

  // Read what is there, then follow from exactly where that reading ended.
  const logs = voters.map((v) => selectLog(v.name, v.logFile, selection));
  for (const { voter, line } of mergedLines(logs, selection)) show(voter, line);
  if (!options.follow) return 0;

  const follower = followLogs(
    logs.map((log) => ({ voter: log.voter, file: log.file, offset: log.end })),
    (voter, line) => {
      if (selection.shown(line)) show(voter, line);
    },
  );
  await untilInterrupted((interruption) => interruption.signalled);
  follower.stop();
  return 0;
}
