/**
 * Child server processes for the side-by-side benchmarks, run with zx: each in its own process group
 * with output to a log file, stopped with SIGTERM, then SIGKILL after a grace period, and their CPU
 * time read from /proc/<pid>/stat.
 */
import { closeSync, openSync, readFileSync } from "node:fs";
import { pickFreePorts } from "@keyload/node/net";
import { $, type ProcessOutput, type ProcessPromise } from "zx";

/** `count` distinct free ports on 127.0.0.1. */
export function freePorts(count: number): Promise<number[]> {
  return pickFreePorts("127.0.0.1", count);
}

export interface SpawnOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout and stderr go here. */
  readonly logFile: string;
}

/** One server process this benchmark started. */
export class ServerProcess {
  private output: ProcessOutput | undefined;

  private constructor(
    readonly name: string,
    readonly logFile: string,
    private readonly child: ProcessPromise,
  ) {
    void child.then((output) => {
      this.output = output;
    });
  }

  static spawn(options: SpawnOptions): ServerProcess {
    const fd = openSync(options.logFile, "a");
    try {
      // Its own process group: a Ctrl-C at the terminal reaches only this script, which stops the
      // servers in order (and --keep can leave them running after it exits). The shell execs the
      // server, so the pid is the server's own, whose CPU time the benchmark reads.
      const child = $({
        cwd: options.cwd ?? process.cwd(),
        env: options.env ?? process.env,
        stdio: ["ignore", fd, fd],
        detached: true,
        nothrow: true,
        quiet: true,
      })`exec ${options.command} ${options.args}`;
      if (child.pid === undefined) throw new Error(`could not start ${options.name} (${options.command})`);
      return new ServerProcess(options.name, options.logFile, child);
    } finally {
      closeSync(fd);
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.stage === "running";
  }

  /** Why it is no longer running, for error messages. */
  describeExit(): string {
    const signal = this.output?.signal;
    return signal ? `killed by ${signal}` : `exited with code ${this.output?.exitCode ?? null}`;
  }

  /** The last lines of its log. */
  logTail(lines = 15): string {
    try {
      return readFileSync(this.logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  }

  /** Lets this script exit while the process goes on (for --keep). */
  detach(): void {
    this.child.child?.unref();
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 8000): Promise<void> {
    if (!this.running) return;
    this.signal("SIGTERM");
    const timer = setTimeout(() => this.signal("SIGKILL"), graceMs);
    await this.child;
    clearTimeout(timer);
  }

  private signal(signal: NodeJS.Signals): void {
    if (!this.running) return;
    // Rejects only when it is already gone.
    this.child.kill(signal).catch(() => {});
  }
}

let clockTicks: number | undefined;

/** The kernel's clock ticks per second (the unit of utime and stime in /proc/<pid>/stat). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    const getconf = $({ sync: true, nothrow: true, quiet: true })`getconf CLK_TCK`;
    clockTicks = (getconf.ok && Number(getconf.stdout.trim())) || 100;
  }
  return clockTicks;
}

/** User plus system CPU seconds of one process, all its threads, from /proc/<pid>/stat. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Field 3 (state) is fields[0]; utime is field 14 and stime field 15.
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / ticksPerSecond();
}

/** Seconds a thread has run on a CPU, and waited runnable for one, since it started. */
export interface ThreadSchedule {
  readonly runSeconds: number;
  readonly waitSeconds: number;
}

/**
 * The schedule of a process's main thread, from /proc/<pid>/schedstat (the thread-group leader's own
 * figures); undefined when the process is gone or the kernel keeps no such statistics.
 */
export function mainThreadSchedule(pid: number): ThreadSchedule | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/schedstat`, "utf8").trim().split(" ").map(Number);
    if (!Number.isFinite(run) || !Number.isFinite(wait)) return undefined;
    return { runSeconds: run! / 1e9, waitSeconds: wait! / 1e9 };
  } catch {
    return undefined;
  }
}

/** CPU seconds of all the given processes together. */
export function totalCpuSeconds(pids: readonly number[]): number {
  let sum = 0;
  for (const pid of pids) sum += processCpuSeconds(pid);
  return sum;
}

/** Busy CPU seconds of the whole machine so far (all cores, everything but idle and iowait), from /proc/stat. */
export function machineBusySeconds(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user).
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const busy = f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!;
  return busy / ticksPerSecond();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Calls `probe` every `intervalMs` until it returns a value, or throws after `timeoutMs` (or at once
 * if `fatal` throws).
 */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
  fatal?: () => void,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    // Throws at once (for example when a server has exited), unlike a failing probe.
    fatal?.();
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? `: ${lastError.message}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await sleep(intervalMs);
  }
}

/**
 * On SIGINT, SIGTERM or SIGHUP: aborts `stopping`, runs `cleanup` (which stops the servers and removes
 * `dir()`), and exits with the signal's status.
 */
export function cleanUpOnSignals(
  stopping: AbortController,
  cleanup: () => Promise<void>,
  dir: () => string,
): void {
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      stopping.abort();
      process.stderr.write(`\n${signal}: stopping the servers and removing ${dir()}\n`);
      cleanup().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
    });
  }
}
