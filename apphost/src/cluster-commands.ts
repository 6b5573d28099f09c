import { buildAppModel, defaultPorts, stateDirPaths, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { type OwnerRecord, readState } from "./apphost-state.js";
import type { CliOptions } from "./cli-options.js";
import { clusterStatus, formatStatus } from "./cluster-status.js";
import { sendControl, type VoterOperation } from "./control-channel.js";
import { LocalCluster } from "./local-cluster.js";
import { followLogs } from "./log-follower.js";
import { formatLogLine, isProbeLine } from "./log-line-format.js";
import { isAlive, waitForExit } from "./process-table.js";
import type { TerminalOutput } from "./terminal-output.js";
import { readFrom } from "./voter-log-file.js";

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
  const state = readState(stateDirPaths(options.stateDir).stateFile);
  if (!state?.voters.some((v) => isAlive(v.process))) {
    output.line(`No cluster is running in ${options.stateDir}.`);
    return 0;
  }
  const { cluster } = await LocalCluster.load(options.stateDir);
  await cluster.stopAll();
  output.line("The cluster stopped.");
  return 0;
}

export async function statusCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const status = await clusterStatus(options.stateDir);
  output.line(options.json ? JSON.stringify(status, null, 2) : formatStatus(status));
  return 0;
}

/** A voter operation, done by the foreground AppHost when there is one, so a started voter dies with it. */
export async function voterCommand(
  operation: VoterOperation,
  voter: VoterName,
  options: CliOptions,
  output: TerminalOutput,
): Promise<number> {
  const owner = foregroundOwner(options.stateDir);
  if (owner) {
    const timeoutMs = operation === "replace" ? REPLACE_TIMEOUT_MS : CONTROL_TIMEOUT_MS;
    output.line(await sendControl(owner.controlSocket, { op: operation, voter }, timeoutMs));
    return 0;
  }
  const { cluster } = await LocalCluster.load(options.stateDir);
  output.line(await cluster.operate(operation, voter, (line) => output.line(line)));
  return 0;
}

/** Orders lines of several voters by their pino `time`; a line without one stays after its predecessor. */
function byTime(entries: { voter: string; line: string }[]): { voter: string; line: string }[] {
  let last = 0;
  return entries
    .map((entry, index) => {
      const match = /"time":(\d+)/.exec(entry.line);
      last = match ? Number(match[1]) : last;
      return { entry, time: last, index };
    })
    .sort((a, b) => a.time - b.time || a.index - b.index)
    .map((e) => e.entry);
}

export async function logsCommand(options: CliOptions, output: TerminalOutput): Promise<number> {
  const state = readState(stateDirPaths(options.stateDir).stateFile);
  const model = buildAppModel(options.stateDir, state?.voters ?? defaultPorts());
  const voters = model.voters.filter((v) => options.voter === undefined || v.name === options.voter);
  const show = (voter: string, line: string): void => {
    if (options.raw) output.line(line);
    else if (!isProbeLine(line)) output.line(formatLogLine(voter, line, output.colour));
  };

  // Read what is there, then follow from exactly where that reading ended.
  const existing = voters.map((v) => {
    const { text } = readFrom(v.logFile, 0);
    const complete = text.slice(0, text.lastIndexOf("\n") + 1);
    const lines = complete.split("\n").slice(0, -1);
    return { voter: v, lines, offset: Buffer.byteLength(complete) };
  });
  const entries = existing.flatMap((e) => e.lines.map((line) => ({ voter: e.voter.name, line })));
  for (const { voter, line } of voters.length > 1 ? byTime(entries) : entries) show(voter, line);
  if (!options.follow) return 0;

  const follower = followLogs(
    existing.map((e) => ({ voter: e.voter.name, file: e.voter.logFile, offset: e.offset })),
    show,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  follower.stop();
  return 0;
}
