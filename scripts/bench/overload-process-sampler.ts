/**
 * Resident memory and CPU time of server processes over a phase: RSS read from /proc/<pid>/status once
 * a second (the peak is kept), CPU time from /proc/<pid>/stat at the phase's start and end, and the
 * whole machine's busy time, so that a report can say how much other work shared the cores. Files a
 * server keeps within a limit (its WALs) are sized at the same samples, their peaks kept too. And how
 * long each main thread ran and waited for a CPU: on cores the flood oversubscribes, an event loop's
 * delay is mostly that wait, not a long task.
 */
import { readFileSync, statSync } from "node:fs";
import {
  machineBusySeconds,
  mainThreadSchedule,
  processCpuSeconds,
  type ThreadSchedule,
} from "./server-processes.js";

/** Resident set size of one process in bytes, or 0 once it is gone. */
export function residentBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function cpuOrZero(pid: number): number {
  try {
    return processCpuSeconds(pid);
  } catch {
    return 0;
  }
}

export interface ProcessFigures {
  readonly pid: number;
  readonly peakRssBytes: number;
  readonly cpuSeconds: number;
  /** The largest size each of the process's watched files had at a sample, in their order. */
  readonly peakFileBytes: readonly number[];
  /** Over the phase, how long the main thread ran and how long it waited for a CPU; undefined unknown. */
  readonly mainThread?: ThreadSchedule;
}

function fileBytes(path: string): number {
  return statSync(path, { throwIfNoEntry: false })?.size ?? 0;
}

export interface SamplerResult {
  readonly seconds: number;
  readonly processes: readonly ProcessFigures[];
  /** CPU seconds of every process on the machine together over the phase. */
  readonly machineBusySeconds: number;
  /** CPU seconds of the helper processes (the control prober) over the phase. */
  readonly helperCpuSeconds: number;
  /** CPU seconds of this process (the flood) over the phase. */
  readonly selfCpuSeconds: number;
}

function scheduleOver(
  before: ThreadSchedule | undefined,
  after: ThreadSchedule | undefined,
): { mainThread?: ThreadSchedule } {
  if (before === undefined || after === undefined) return {};
  return {
    mainThread: {
      runSeconds: after.runSeconds - before.runSeconds,
      waitSeconds: after.waitSeconds - before.waitSeconds,
    },
  };
}

export class ProcessSampler {
  private readonly peaks: Map<number, number>;
  /** Per process, the peak size of each watched file. */
  private readonly filePeaks: number[][];
  private readonly cpuBefore: Map<number, number>;
  private readonly scheduleBefore: Map<number, ThreadSchedule | undefined>;
  private readonly helperBefore: number;
  private readonly machineBefore: number;
  private readonly started = performance.now();
  private readonly selfBefore = process.cpuUsage();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pids: readonly number[],
    private readonly helperPids: readonly number[] = [],
    /** Per process, in the order of `pids`, the files whose peak size to keep. */
    private readonly files: readonly (readonly string[])[] = [],
  ) {
    this.peaks = new Map(pids.map((pid) => [pid, residentBytes(pid)]));
    this.filePeaks = pids.map((_, i) => (files[i] ?? []).map(fileBytes));
    this.cpuBefore = new Map(pids.map((pid) => [pid, cpuOrZero(pid)]));
    this.scheduleBefore = new Map(pids.map((pid) => [pid, mainThreadSchedule(pid)]));
    this.helperBefore = helperPids.reduce((sum, pid) => sum + cpuOrZero(pid), 0);
    this.machineBefore = machineBusySeconds();
    this.timer = setInterval(() => this.sample(), 1000);
  }

  private sample(): void {
    for (const pid of this.pids) this.peaks.set(pid, Math.max(this.peaks.get(pid) ?? 0, residentBytes(pid)));
    this.filePeaks.forEach((peaks, i) => {
      (this.files[i] ?? []).forEach((path, j) => {
        peaks[j] = Math.max(peaks[j]!, fileBytes(path));
      });
    });
  }

  stop(): SamplerResult {
    clearInterval(this.timer);
    this.sample();
    const self = process.cpuUsage(this.selfBefore);
    return {
      seconds: (performance.now() - this.started) / 1000,
      processes: this.pids.map((pid, i) => ({
        pid,
        peakRssBytes: this.peaks.get(pid) ?? 0,
        cpuSeconds: cpuOrZero(pid) - (this.cpuBefore.get(pid) ?? 0),
        peakFileBytes: this.filePeaks[i]!,
        ...scheduleOver(this.scheduleBefore.get(pid), mainThreadSchedule(pid)),
      })),
      machineBusySeconds: machineBusySeconds() - this.machineBefore,
      helperCpuSeconds: this.helperPids.reduce((sum, pid) => sum + cpuOrZero(pid), 0) - this.helperBefore,
      selfCpuSeconds: (self.user + self.system) / 1e6,
    };
  }
}
