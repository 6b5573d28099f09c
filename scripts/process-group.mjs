// Commands run in a process group (and session) of their own, shared by the CI runner and the soak
// runs. This script's first SIGINT, SIGTERM or SIGHUP goes to each running command's whole group at
// once, as a terminal's Ctrl-C goes to a foreground job, so every process of it cleans up as it
// would then; a second signal, or a command still running `graceMs` later, has its process tree
// killed. Whatever of a group outlives the command's own process is waited for, then killed, so a
// command leaves nothing running.
import { readdirSync, readFileSync } from "node:fs";
import { constants } from "node:os";
import { $, sleep } from "zx";

/** @typedef {{ child: import("zx").ProcessPromise, graceMs: number, timer?: NodeJS.Timeout }} Running */

/** @type {NodeJS.Signals | undefined} */
let interruption;
/** @type {Set<Running>} */
const running = new Set();

/** The signal that interrupted this script, once one has. */
export function interruptedBy() {
  return interruption;
}

/**
 * Handles SIGINT, SIGTERM and SIGHUP from now on: this script no longer dies of them, `onFirst` hears
 * of the first, and the running commands are interrupted as described above.
 * @param {(signal: NodeJS.Signals) => void} onFirst
 */
export function handleInterrupts(onFirst) {
  for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM", "SIGHUP"])) {
    process.on(signal, () => {
      if (interruption !== undefined) {
        for (const entry of running) kill(entry);
        return;
      }
      interruption = signal;
      onFirst(signal);
      for (const entry of running) interrupt(entry);
    });
  }
}

/**
 * Runs `command` (program and arguments) in a new process group and resolves, without throwing, with
 * its output once nothing of its group runs any more.
 * @param {readonly string[]} command
 * @param {{ cwd: string, stdio: import("node:child_process").StdioOptions, env?: NodeJS.ProcessEnv, graceMs: number }} options
 * @returns {Promise<import("zx").ProcessOutput>}
 */
export async function runInGroup(command, { cwd, stdio, env = process.env, graceMs }) {
  // The shell execs the command, whose pid is then the group's id.
  const child = $({ cwd, stdio, env, detached: true, nothrow: true, quiet: true })`exec ${command}`;
  const entry = { child, graceMs };
  running.add(entry);
  if (interruption !== undefined) interrupt(entry);
  try {
    const output = await child;
    if (child.pid !== undefined) await endGroup(child.pid, graceMs);
    return output;
  } finally {
    clearTimeout(entry.timer);
    running.delete(entry);
  }
}

/**
 * Kills a running command and every process it started, with SIGKILL.
 * @param {import("zx").ProcessPromise} child
 */
export function killTree(child) {
  if (child.stage !== "running") return;
  // Rejects only when it is already gone.
  child.kill("SIGKILL").catch(() => {});
}

/**
 * A command's exit status as a shell gives it: 128 plus the signal's number when a signal ended it.
 * @param {import("zx").ProcessOutput} output
 */
export function exitStatus(output) {
  if (output.exitCode !== null) return output.exitCode;
  return output.signal ? signalStatus(output.signal) : 128;
}

/**
 * The status a shell gives a command ended by `signal`.
 * @param {NodeJS.Signals} signal
 */
export function signalStatus(signal) {
  return 128 + constants.signals[signal];
}

/** @param {Running} entry */
function interrupt(entry) {
  const pid = entry.child.pid;
  if (pid === undefined || entry.timer !== undefined) return;
  signalGroup(pid, /** @type {NodeJS.Signals} */ (interruption));
  entry.timer = setTimeout(() => kill(entry), entry.graceMs);
}

/**
 * The command's process tree, and what is left of its group once the command itself has exited.
 * @param {Running} entry
 */
function kill(entry) {
  killTree(entry.child);
  if (entry.child.pid !== undefined) signalGroup(entry.child.pid, "SIGKILL");
}

/**
 * Waits until no process of group `pgid` is left, for `graceMs` at most, then kills those that are.
 * @param {number} pgid
 * @param {number} graceMs
 */
async function endGroup(pgid, graceMs) {
  const deadline = Date.now() + graceMs;
  while (liveMembers(pgid) > 0) {
    if (Date.now() > deadline) {
      signalGroup(pgid, "SIGKILL");
      return;
    }
    await sleep(100);
  }
}

/** @param {number} pgid @param {NodeJS.Signals} signal */
function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is empty already.
  }
}

/**
 * How many processes of group `pgid` still run, from /proc (none where there is no /proc). Zombies
 * do not count: an orphan's may never be reaped where the init process does not reap.
 * @param {number} pgid
 */
function liveMembers(pgid) {
  let entries;
  try {
    entries = readdirSync("/proc");
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // After the command name's closing parenthesis: state, parent pid, process group.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] !== "Z" && Number(fields[2]) === pgid) count++;
  }
  return count;
}
