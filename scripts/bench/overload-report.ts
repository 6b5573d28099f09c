/**
 * The flood benchmark's figures and how they are printed: one record per phase and system, a table,
 * one JSON line per record for the docs, and the issue's targets as figures and ratios (never
 * asserted: a missed target is printed, not failed).
 */

import { cpus } from "node:os";
import { SETTLE_MS } from "./overload-control.js";
import { describeStages, type StageFigure } from "./overload-stage-trace.js";

export type System = "keyload" | "etcd";
export type FloodClient = "immediate" | "keyload";
export const SYSTEM_NAMES: Record<System, string> = { keyload: "KeyLoad", etcd: "etcd" };

export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface ControlFigures extends LatencySummary {
  readonly sent: number;
  readonly errors: Record<string, number>;
  /** How late the prober itself was to send on schedule, at worst (ms). */
  readonly maxLateMs: number;
  /** The writes sent after the phase's first seconds (overload-control.ts, `SETTLE_MS`). */
  readonly settled: LatencySummary;
  /** Connections the prober opened during the phase. */
  readonly newConnections: number;
}

export interface ServerFigures {
  readonly name: string;
  readonly leader: boolean;
  /** Worst one-second event-loop delay p99 and the largest single delay (ms); KeyLoad only. */
  readonly loopP99?: number;
  readonly loopMax?: number;
  /** The share of the phase spent in garbage-collection pauses, and the longest pause (ms). */
  readonly gcShare?: number;
  readonly gcMax?: number;
  readonly peakRssBytes: number;
  readonly cpuSeconds: number;
  /** Shares of the phase the main thread ran, and waited runnable for a CPU; where the kernel says. */
  readonly mainThreadRunShare?: number;
  readonly mainThreadWaitShare?: number;
  /** KeyLoad only: the largest size the state database's WAL and the log database's WAL reached. */
  readonly peakStateWalBytes?: number;
  readonly peakLogWalBytes?: number;
}

export interface PhaseRecord {
  readonly system: System;
  readonly phase: "idle" | "closed-loop" | "flood";
  readonly valueBytes: number;
  readonly seconds: number;
  /** Flood: the flooding client; closed loop: none. */
  readonly client?: FloodClient;
  readonly connections: number;
  readonly principals: number;
  readonly tenants: number;
  readonly acked: number;
  /** Acknowledged writes per second. */
  readonly goodput: number;
  readonly data?: LatencySummary;
  /** Refusals the flooding client saw, by reason. */
  readonly clientRefusals: Record<string, number>;
  /** Refusals the voters counted over the phase (KeyLoad), by governor/pool-or-lane/reason. */
  readonly serverRefusals: Record<string, number>;
  /** The refusals sent to clients per second: the voters' count for KeyLoad, the client's for etcd. */
  readonly refusalsPerSecond: number;
  readonly errors: Record<string, number>;
  readonly control?: ControlFigures;
  readonly servers: readonly ServerFigures[];
  /** CPU of all three servers per acknowledged write (ms). */
  readonly cpuMsPerWrite: number;
  readonly leaderCpuMsPerWrite: number;
  readonly leaderPeakRssBytes: number;
  /** Cores kept busy by anything but the servers, this process and the control prober. */
  readonly otherCores: number;
  /** Cores this process (the flooding client) and the control prober kept busy: they share the machine. */
  readonly benchCores: number;
  readonly leaderChanged: boolean;
  /** KeyLoad: the leader's stage figures over the phase, per lane (overload-stage-trace.ts). */
  readonly stages?: { readonly control: readonly StageFigure[]; readonly data: readonly StageFigure[] };
}

export function summarize(sorted: readonly number[]): LatencySummary {
  const q = (p: number): number =>
    sorted.length === 0
      ? Number.NaN
      : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  return { count: sorted.length, p50: q(0.5), p99: q(0.99), max: sorted.at(-1) ?? Number.NaN };
}

const fin = (n: number | undefined): n is number => n !== undefined && Number.isFinite(n);
export const int = (n: number | undefined): string => (fin(n) ? Math.round(n).toLocaleString("en-US") : "—");
export const ms = (n: number | undefined): string => (fin(n) ? n.toFixed(n < 10 ? 2 : 1) : "—");
const mib = (bytes: number | undefined): string =>
  fin(bytes) && bytes > 0 ? (bytes / 2 ** 20).toFixed(0) : "—";
const x = (n: number | undefined): string => (fin(n) ? `${n.toFixed(2)}×` : "—");
const percent = (share: number): string => (fin(share) ? `${(100 * share).toFixed(0)} %` : "—");
const size = (bytes: number): string =>
  bytes >= 1024 && bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} B`;

function reasons(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return entries.length === 0 ? "none" : entries.map(([k, n]) => `${k} ${int(n)}`).join(", ");
}

function triple(s: LatencySummary | undefined): string {
  return s ? `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)}` : "—";
}

/** One line per phase as it ends. */
export function describePhase(r: PhaseRecord): string {
  const what =
    r.phase === "flood" ? `flood (${r.client})` : r.phase === "closed-loop" ? `closed loop` : "idle";
  const parts = [
    `  ${SYSTEM_NAMES[r.system].padEnd(7)} ${size(r.valueBytes).padEnd(7)} ${what.padEnd(17)} c=${String(r.connections).padEnd(4)}`,
  ];
  if (r.phase !== "idle") {
    parts.push(
      `${int(r.goodput).padStart(6)} writes/s (${((r.goodput * r.valueBytes) / 2 ** 20).toFixed(1)} MiB/s)`,
      `write p50/p99 ${ms(r.data?.p50)}/${ms(r.data?.p99)} ms`,
    );
  }
  if (r.control) parts.push(`control p50/p99/max ${triple(r.control)} ms`);
  if (r.phase === "flood") parts.push(`refusals ${int(r.refusalsPerSecond)}/s`);
  parts.push(
    `CPU ${ms(r.cpuMsPerWrite)} ms/write`,
    `bench ${r.benchCores.toFixed(2)} cores`,
    `others ${r.otherCores.toFixed(2)} cores`,
  );
  const lines = [parts.join("  ")];
  if (r.phase === "flood") {
    lines.push(`      refusals seen by the client: ${reasons(r.clientRefusals)}`);
    if (r.system === "keyload")
      lines.push(`      refusals counted by the voters: ${reasons(r.serverRefusals)}`);
  }
  if (Object.keys(r.errors).length > 0) lines.push(`      other failures: ${reasons(r.errors)}`);
  if (r.control && Object.keys(r.control.errors).length > 0) {
    lines.push(`      control failures: ${reasons(r.control.errors)}`);
  }
  if (r.control && r.phase === "flood") {
    lines.push(
      `      control sent after the first ${SETTLE_MS / 1000} s p50/p99/max ${triple(r.control.settled)} ms; ` +
        `connections the prober opened: ${r.control.newConnections}`,
    );
  }
  if (r.control && r.control.maxLateMs > 20) {
    lines.push(`      the control prober itself sent up to ${ms(r.control.maxLateMs)} ms late`);
  }
  if (r.servers.length > 0) {
    lines.push(
      `      servers: ${r.servers
        .map(
          (s) =>
            `${s.name}${s.leader ? "*" : ""} ${s.loopP99 !== undefined ? `loop p99 (worst second) ${ms(s.loopP99)} max ${ms(s.loopMax)} ms, ` : ""}` +
            `${s.gcShare !== undefined ? `GC ${(100 * s.gcShare).toFixed(0)} % (longest ${ms(s.gcMax)} ms), ` : ""}` +
            `RSS ${mib(s.peakRssBytes)} MiB, CPU ${s.cpuSeconds.toFixed(1)} s` +
            (s.mainThreadRunShare !== undefined && s.mainThreadWaitShare !== undefined
              ? ` (main thread ran ${percent(s.mainThreadRunShare)}, waited for a CPU ${percent(s.mainThreadWaitShare)})`
              : "") +
            (s.peakStateWalBytes !== undefined && s.peakLogWalBytes !== undefined
              ? `, WAL peak state ${mib(s.peakStateWalBytes)} / log ${mib(s.peakLogWalBytes)} MiB`
              : ""),
        )
        .join("; ")}`,
    );
  }
  if (r.stages) {
    // A closed loop sends no control writes; an idle phase no data.
    if (r.phase !== "closed-loop")
      lines.push(`      leader's control stages, mean/p99 ms: ${describeStages(r.stages.control)}`);
    if (r.phase !== "idle")
      lines.push(`      leader's data stages, mean/p99 ms: ${describeStages(r.stages.data)}`);
  }
  if (r.leaderChanged) lines.push("      the leader changed during the phase");
  return lines.join("\n");
}

/** One run of one system at one value size. */
export interface SystemRun {
  readonly system: System;
  readonly valueBytes: number;
  readonly idle?: PhaseRecord;
  readonly closedLoop: readonly PhaseRecord[];
  readonly floods: readonly PhaseRecord[];
  /**
   * KeyLoad: the bytes its admission limits let the leader hold at once (both command lanes' retained
   * bytes and both HTTP pools' modeled bytes), read from its admission status.
   */
  readonly admissionBytes?: number;
}

export function bestClosedLoop(run: SystemRun | undefined): PhaseRecord | undefined {
  return run?.closedLoop.reduce<PhaseRecord | undefined>(
    (best, r) => (best === undefined || r.goodput > best.goodput ? r : best),
    undefined,
  );
}

export function table(runs: readonly SystemRun[]): string {
  const lines = [
    "| value | system | client | connections | goodput writes/s | MiB/s | refusals/s | control idle p50 / p99 / max ms | control under flood p50 / p99 / max ms | loop delay p99 per voter (worst second) ms | CPU ms / write | leader peak RSS MiB | other cores |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const run of runs) {
    for (const f of run.floods) {
      const loops = f.servers.every((s) => s.loopP99 === undefined)
        ? "—"
        : f.servers.map((s) => `${ms(s.loopP99)}${s.leader ? "*" : ""}`).join(", ");
      lines.push(
        `| ${size(run.valueBytes)} | ${SYSTEM_NAMES[run.system]} | ${f.client ?? "—"} | ${f.connections} | ${int(f.goodput)} | ` +
          `${((f.goodput * run.valueBytes) / 2 ** 20).toFixed(1)} | ${int(f.refusalsPerSecond)} | ${triple(run.idle?.control)} | ` +
          `${triple(f.control)} | ${loops} | ${ms(f.cpuMsPerWrite)} | ${mib(f.leaderPeakRssBytes)} | ${f.otherCores.toFixed(2)} |`,
      );
    }
  }
  return lines.join("\n");
}

/** The record as a JSON line, without per-request latencies. */
export function jsonLine(r: PhaseRecord, date: string): string {
  return JSON.stringify({ bench: "overload", date, ...r });
}

function verdict(ok: boolean | undefined): string {
  return ok === undefined ? "" : ok ? " ✓ met" : " ✗ missed";
}

/** The issue's targets for one value size, as figures and ratios. */
export function targets(keyload: SystemRun | undefined, etcd: SystemRun | undefined): string[] {
  if (!keyload) return [];
  const out: string[] = [];
  const head = `${size(keyload.valueBytes)}:`;
  const etcdFlood = etcd?.floods[0];
  const best = bestClosedLoop(keyload);
  const immediate = keyload.floods.find((f) => f.client === "immediate");
  for (const f of keyload.floods) {
    const who = `${head} flood by ${f.client === "immediate" ? "immediate retry" : "KeyLoadClient"}`;
    const p99 = f.control?.p99;
    out.push(
      `${who}: control p99 under flood ${ms(p99)} ms (target ≤ 100 ms, ratio ${x(fin(p99) ? p99 / 100 : undefined)})${verdict(fin(p99) ? p99 <= 100 : undefined)}`,
    );
    const vsEtcd = fin(p99) && fin(etcdFlood?.control?.p99) ? p99 / etcdFlood.control.p99 : undefined;
    out.push(
      `${who}: control p99 ${x(vsEtcd)} etcd's (${ms(etcdFlood?.control?.p99)} ms; target ≤ 0.20×)${verdict(fin(vsEtcd) ? vsEtcd <= 0.2 : undefined)}`,
    );
    const idleP50 = keyload.idle?.control?.p50;
    const vsIdle = fin(f.control?.p50) && fin(idleP50) ? f.control.p50 / idleP50 : undefined;
    out.push(
      `${who}: control p50 ${ms(f.control?.p50)} ms under flood vs ${ms(idleP50)} ms idle: ${x(vsIdle)} (target ≤ 3×)${verdict(fin(vsIdle) ? vsIdle <= 3 : undefined)}`,
    );
    const vsEtcdGoodput = etcdFlood && etcdFlood.goodput > 0 ? f.goodput / etcdFlood.goodput : undefined;
    out.push(
      `${who}: goodput ${int(f.goodput)} writes/s, ${x(vsEtcdGoodput)} etcd's ${int(etcdFlood?.goodput)} (target ≥ 1.0×)${verdict(fin(vsEtcdGoodput) ? vsEtcdGoodput >= 1 : undefined)}`,
    );
    const vsBest = best && best.goodput > 0 ? f.goodput / best.goodput : undefined;
    out.push(
      `${who}: goodput ${x(vsBest)} KeyLoad's best closed loop ${int(best?.goodput)} writes/s at ${best?.connections ?? "—"} connections (target ≥ 0.90×)${verdict(fin(vsBest) ? vsBest >= 0.9 : undefined)}`,
    );
    const loops = f.servers.filter((s) => s.loopP99 !== undefined);
    const worst = loops.length > 0 ? Math.max(...loops.map((s) => s.loopP99!)) : undefined;
    out.push(
      `${who}: event-loop delay p99 per voter (worst one-second p99) ${loops.map((s) => `${s.name}${s.leader ? "*" : ""} ${ms(s.loopP99)}`).join(", ") || "—"} ms (target < 50 ms each)${verdict(fin(worst) ? worst < 50 : undefined)}`,
    );
    // The bound: the leader at rest (the idle phase's peak) plus all the admission limits let it hold.
    const idleRss = keyload.idle?.leaderPeakRssBytes;
    const bound = fin(idleRss) && fin(keyload.admissionBytes) ? idleRss + keyload.admissionBytes : undefined;
    out.push(
      `${who}: leader peak RSS ${mib(f.leaderPeakRssBytes)} MiB, bound ${mib(bound)} MiB (idle ${mib(idleRss)} + admission limits ${mib(keyload.admissionBytes)})${verdict(fin(bound) ? f.leaderPeakRssBytes <= bound : undefined)}; etcd's leader ${mib(etcdFlood?.leaderPeakRssBytes)} MiB`,
    );
    out.push(
      `${who}: CPU ${ms(f.cpuMsPerWrite)} ms per acknowledged write (etcd ${ms(etcdFlood?.cpuMsPerWrite)})`,
    );
    if (etcdFlood && etcdFlood.goodput > 0) {
      // What etcd's goodput would take at KeyLoad's CPU per write, beside the flooding client's own
      // cores: a goodput target the machine's cores cannot hold needs less work per write first.
      const cores = (msPerWrite: number | undefined): string =>
        fin(msPerWrite) ? ((etcdFlood.goodput * msPerWrite) / 1000).toFixed(2) : "—";
      out.push(
        `${who}: etcd's ${int(etcdFlood.goodput)} writes/s would keep ${cores(f.cpuMsPerWrite)} cores busy in the voters at this flood's CPU per write (${cores(best?.cpuMsPerWrite)} at the best closed loop's), beside ${f.benchCores.toFixed(2)} of the flooding client; the machine has ${cpus().length}`,
      );
    }
    if (f.client === "keyload") {
      const vsImmediate = immediate && immediate.goodput > 0 ? f.goodput / immediate.goodput : undefined;
      out.push(
        `${who}: goodput ${x(vsImmediate)} the immediate-retry flood's ${int(immediate?.goodput)} writes/s (target ≥ 1.0×)${verdict(fin(vsImmediate) ? vsImmediate >= 1 : undefined)}`,
      );
      const share = f.goodput > 0 ? f.refusalsPerSecond / f.goodput : undefined;
      out.push(
        `${who}: refusals ${int(f.refusalsPerSecond)}/s, ${x(share)} the goodput (target ≤ 0.10×)${verdict(fin(share) ? share <= 0.1 : undefined)}`,
      );
    }
  }
  return out;
}
