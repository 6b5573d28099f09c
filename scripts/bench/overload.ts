/**
 * The flood: three KeyLoad voters with their shipped settings, 32 principals over 4 tenants writing
 * `PUT /v1/catalog/{key}` from 256 connections, each resending at once on every 429, while one other
 * principal sends `POST /v1/dispatch/{channel}` every 50 ms; then the same flood against a three-member
 * etcd, whose control write is a small put every 50 ms. Per value size and system, in one run:
 *
 * 1. a fresh cluster (the voters with an event-loop probe preloaded, see overload-loop-probe.ts), the
 *    principals created through the admin API, a warm-up not measured;
 * 2. KeyLoad only: its best closed-loop throughput at this value size, at a few concurrencies within
 *    its shipped admission limits (the load spread over the same principals);
 * 3. idle: the control writes alone;
 * 4. the flood (each chosen client in turn), the control writes throughout.
 *
 * It prints goodput, refusals by reason, control p50/p99/max idle and under flood, each voter's
 * event-loop delay p99 (the worst second), CPU per acknowledged write and the leader's peak RSS, as a
 * table, as one JSON line per phase, and as the issue's targets with their ratios (never asserted).
 * Everything it starts (servers, the control prober, the temp dir) is removed at the end, on error and
 * on Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, release, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { type LoadResult, type LoadTarget, runClosedLoop } from "./closed-loop-load.js";
import { EtcdCluster, etcdVersion } from "./etcd-cluster.js";
import { buildVoter, KeyLoadCluster } from "./keyload-cluster.js";
import { ControlProber, type ControlResult } from "./overload-control.js";
import { type FloodResult, runClientFlood, runImmediateFlood } from "./overload-flood.js";
import { installLoopProbe, LOOP_RESOLUTION_MS, readLoopSamples } from "./overload-loop-probe.js";
import { createPrincipals } from "./overload-principals.js";
import { ProcessSampler, type SamplerResult } from "./overload-process-sampler.js";
import { refusalsBetween, scrapeRefusals } from "./overload-refusal-counters.js";
import {
  bestClosedLoop,
  type ControlFigures,
  describePhase,
  type FloodClient,
  int,
  jsonLine,
  type PhaseRecord,
  type ServerFigures,
  SYSTEM_NAMES,
  type SystemRun,
  summarize,
  table,
  targets,
} from "./overload-report.js";
import { scrapeStages, stagesBetween } from "./overload-stage-trace.js";
import { scriptArgs } from "./script-args.js";
import { cleanUpOnSignals, type ServerProcess, sleep } from "./server-processes.js";

const HELP = `pnpm bench:overload [-- options]

  --connections N        flooding connections (default 256)
  --value-bytes LIST     value size in bytes, or a list (65536,1024) for one flood each (default 65536)
  --principals N         flooding principals (default 32)
  --tenants N            their tenants (default 4)
  --client MODE          immediate | keyload | both (default immediate): the flooding client
  --seconds S            each flood phase (default 20)
  --idle-seconds S       the control writes alone, before the flood (default 10)
  --systems LIST         keyload,etcd (default both)
  --closed-loop LIST     concurrencies of KeyLoad's closed-loop reference (default 8,16,32; 0 skips)
  --closed-loop-seconds S  each of them (default 10)
  --warmup S             closed-loop warm-up after start, not measured (default 5)
  --keys N               keys the writes cycle over (default 1000)
  --control-interval MS  between two control writes (default 50)
  --dir DIR              where the temp dir goes (default the OS temp dir)
  --from-source          run the voters' sources through tsx instead of the compiled dist
  --cpu-prof DIR         run the voters with --cpu-prof, profiles written to DIR as they stop (for
                         cpu-profile-summary.ts; each phase prints its window in seconds)
  --node-flags=FLAGS     more Node flags for every voter, space-separated, after an "=" since they
                         start with dashes: --node-flags=--trace-gc, or --node-flags=--perf-basic-prof
                         for perf to name the JIT's functions
  --log-level LEVEL      the voters' Log:Level (default info, as shipped)
  --logs DIR             keep each voter's log (what it and Node print) as DIR/<size>-<voter>.log
  --help`;

const { values: opts } = parseArgs({
  args: scriptArgs(),
  options: {
    connections: { type: "string", default: "256" },
    "value-bytes": { type: "string", default: "65536" },
    principals: { type: "string", default: "32" },
    tenants: { type: "string", default: "4" },
    client: { type: "string", default: "immediate" },
    seconds: { type: "string", default: "20" },
    "idle-seconds": { type: "string", default: "10" },
    systems: { type: "string", default: "keyload,etcd" },
    "closed-loop": { type: "string", default: "8,16,32" },
    "closed-loop-seconds": { type: "string", default: "10" },
    warmup: { type: "string", default: "5" },
    keys: { type: "string", default: "1000" },
    "control-interval": { type: "string", default: "50" },
    dir: { type: "string", default: tmpdir() },
    "from-source": { type: "boolean", default: false },
    "cpu-prof": { type: "string" },
    "node-flags": { type: "string", default: "" },
    logs: { type: "string" },
    "log-level": { type: "string", default: "info" },
    help: { type: "boolean", default: false },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}

function positive(name: string, raw: string, allowZero = false): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) {
    throw new Error(`--${name} must be a ${allowZero ? "non-negative" : "positive"} number, not ${raw}`);
  }
  return n;
}
const list = (name: string, raw: string, allowZero = false): number[] =>
  raw.split(",").map((v) => Math.trunc(positive(name, v.trim(), allowZero)));

const connections = Math.trunc(positive("connections", opts.connections));
const valueSizes = list("value-bytes", opts["value-bytes"]);
const principals = Math.trunc(positive("principals", opts.principals));
const tenants = Math.trunc(positive("tenants", opts.tenants));
const floodSeconds = positive("seconds", opts.seconds);
const idleSeconds = positive("idle-seconds", opts["idle-seconds"]);
const closedLoopLevels = list("closed-loop", opts["closed-loop"], true).filter((n) => n > 0);
const closedLoopSeconds = positive("closed-loop-seconds", opts["closed-loop-seconds"]);
const warmupSeconds = positive("warmup", opts.warmup, true);
const keySpace = Math.trunc(positive("keys", opts.keys));
const controlIntervalMs = positive("control-interval", opts["control-interval"]);
const extraNodeFlags = opts["node-flags"].split(" ").filter((flag) => flag !== "");
const clientModes: FloodClient[] =
  opts.client === "both" ? ["immediate", "keyload"] : opts.client === "keyload" ? ["keyload"] : ["immediate"];
if (!["immediate", "keyload", "both"].includes(opts.client)) {
  throw new Error(`--client takes immediate, keyload or both, not ${opts.client}`);
}
const systems = opts.systems.split(",").map((s) => s.trim().toLowerCase());
for (const s of systems) {
  if (s !== "etcd" && s !== "keyload") throw new Error(`--systems takes keyload and etcd, not ${s}`);
}
if (tenants > principals) throw new Error("--tenants cannot exceed --principals");

// ---------------------------------------------------------------------------------------------------
// Cleanup: every process and the temp dir, at the end, on error and on Ctrl-C.

const processes: ServerProcess[] = [];
const probers: ControlProber[] = [];
const pools: Pool[] = [];
let root: string | undefined;
let cleaning: Promise<void> | undefined;
const stopping = new AbortController();

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const p of probers) p.kill();
    await Promise.allSettled(pools.map((p) => p.destroy()));
    await Promise.allSettled(processes.map((p) => p.stop()));
    if (root) rmSync(root, { recursive: true, force: true });
  })();
  return cleaning;
}

cleanUpOnSignals(stopping, cleanup, () => root ?? "the temp dir");

function checkStopping(): void {
  if (stopping.signal.aborted) throw new Error("stopped");
}

// ---------------------------------------------------------------------------------------------------
// Measuring.

const runTag = randomBytes(4).toString("hex");
let phaseCounter = 0;
const track = (p: ServerProcess): void => {
  processes.push(p);
};

/** A server of the cluster under test, for the figures. */
interface Server {
  readonly name: string;
  readonly pid: number;
  /** KeyLoad voters only: where their event-loop samples are. */
  readonly loopDir?: string;
  /** KeyLoad voters only: their state database's WAL and their log database's, in that order. */
  readonly walFiles?: readonly [string, string];
}

function controlFigures(r: ControlResult): ControlFigures {
  return {
    ...summarize(r.latencies),
    sent: r.sent,
    errors: r.errors,
    maxLateMs: r.maxLateMs,
    settled: summarize(r.settledLatencies),
    newConnections: r.newConnections,
  };
}

interface PhaseInputs {
  readonly system: SystemRun["system"];
  readonly phase: PhaseRecord["phase"];
  readonly valueBytes: number;
  readonly client?: FloodClient;
  readonly connections: number;
  readonly servers: readonly Server[];
  readonly leader: number;
  readonly leaderAfter: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly sampled: SamplerResult;
  readonly acked: number;
  readonly seconds: number;
  readonly latencies?: readonly number[];
  readonly clientRefusals?: Record<string, number>;
  readonly serverRefusals?: Record<string, number>;
  readonly errors?: Record<string, number>;
  readonly control?: ControlResult;
  readonly stages?: PhaseRecord["stages"];
}

function record(p: PhaseInputs): PhaseRecord {
  const servers: ServerFigures[] = p.servers.map((s, i) => {
    const figures = p.sampled.processes[i]!;
    const [stateWal, logWal] = figures.peakFileBytes;
    const base = {
      name: s.name,
      leader: i === p.leader,
      peakRssBytes: figures.peakRssBytes,
      cpuSeconds: figures.cpuSeconds,
      ...(figures.mainThread === undefined
        ? {}
        : {
            mainThreadRunShare: figures.mainThread.runSeconds / p.sampled.seconds,
            mainThreadWaitShare: figures.mainThread.waitSeconds / p.sampled.seconds,
          }),
      ...(stateWal !== undefined && logWal !== undefined
        ? { peakStateWalBytes: stateWal, peakLogWalBytes: logWal }
        : {}),
    };
    if (s.loopDir === undefined) return base;
    const samples = readLoopSamples(s.loopDir, s.name, p.fromMs, p.toMs);
    return {
      ...base,
      loopP99: samples.length > 0 ? Math.max(...samples.map((x) => x.p99)) : Number.NaN,
      loopMax: samples.length > 0 ? Math.max(...samples.map((x) => x.max)) : Number.NaN,
      gcShare:
        samples.length > 0 ? samples.reduce((a, x) => a + x.gcMs, 0) / (samples.length * 1000) : Number.NaN,
      gcMax: samples.length > 0 ? Math.max(...samples.map((x) => x.gcMax)) : Number.NaN,
    };
  });
  const serverCpu = servers.reduce((sum, s) => sum + s.cpuSeconds, 0);
  const clientRefusals = p.clientRefusals ?? {};
  const serverRefusals = p.serverRefusals ?? {};
  const refusals =
    p.system === "keyload"
      ? Object.values(serverRefusals).reduce((a, b) => a + b, 0)
      : Object.values(clientRefusals).reduce((a, b) => a + b, 0);
  const own = p.sampled.selfCpuSeconds + p.sampled.helperCpuSeconds;
  return {
    system: p.system,
    phase: p.phase,
    valueBytes: p.valueBytes,
    seconds: p.seconds,
    ...(p.client ? { client: p.client } : {}),
    connections: p.connections,
    principals,
    tenants,
    acked: p.acked,
    goodput: p.acked / p.seconds,
    ...(p.latencies ? { data: summarize(p.latencies) } : {}),
    clientRefusals,
    serverRefusals,
    refusalsPerSecond: refusals / p.seconds,
    errors: p.errors ?? {},
    ...(p.control ? { control: controlFigures(p.control) } : {}),
    servers,
    cpuMsPerWrite: p.acked > 0 ? (serverCpu / p.acked) * 1000 : Number.NaN,
    leaderCpuMsPerWrite: p.acked > 0 ? (servers[p.leader]!.cpuSeconds / p.acked) * 1000 : Number.NaN,
    leaderPeakRssBytes: servers[p.leader]!.peakRssBytes,
    otherCores: Math.max(0, p.sampled.machineBusySeconds - serverCpu - own) / p.sampled.seconds,
    benchCores: own / p.sampled.seconds,
    leaderChanged: p.leader !== p.leaderAfter,
    ...(p.stages ? { stages: p.stages } : {}),
  };
}

function randomValue(bytes: number): string {
  return randomBytes(bytes).toString("base64").slice(0, bytes);
}

/**
 * How many values a run writes in turn, so that a document written again gets another value, as real
 * writes do. With one value for every write, SQLite finds the overflow pages of a rewritten 64 KiB
 * document unchanged and skips them: the closed loop, which rewrote the documents it had written, sent
 * its state WAL a third of the frames per write that the flood did, whose writes were mostly a
 * tenant's first of a key. Prime, so that neither phase's key pattern comes back to a key on the
 * value it wrote there last.
 */
const VALUE_POOL = 61;

const valuePool = (bytes: number, encode: (value: string) => string = (v) => v): string[] =>
  Array.from({ length: VALUE_POOL }, () => encode(randomValue(bytes)));

/** The value the `seq`-th write of `connection` carries. */
const valueIndex = (connection: number, seq: number): number => (connection * 17 + seq) % VALUE_POOL;

const keyOf = (connection: number, seq: number): string =>
  `k${(connection * 7919 + seq * 104_729) % keySpace}`;

function trackedPool(origin: string, connections_: number): Pool {
  const pool = new Pool(origin, { connections: connections_, pipelining: 1, keepAliveTimeout: 30_000 });
  pools.push(pool);
  return pool;
}

async function closePool(pool: Pool): Promise<void> {
  pools.splice(pools.indexOf(pool), 1);
  await pool.destroy();
}

// ---------------------------------------------------------------------------------------------------
// KeyLoad.

/** When the profiled voters started, to print each phase's window in their profiles' seconds. */
let profileOriginMs = 0;

function cpuProfileFlags(): string[] {
  if (opts["cpu-prof"] === undefined) return [];
  profileOriginMs = Date.now();
  const profDir = resolve(opts["cpu-prof"]);
  mkdirSync(profDir, { recursive: true });
  return ["--cpu-prof", `--cpu-prof-dir=${profDir}`];
}

async function runKeyLoad(valueBytes: number): Promise<SystemRun> {
  const dir = join(root!, `keyload-${valueBytes}`);
  const loopDir = join(dir, "loop");
  mkdirSync(loopDir, { recursive: true });
  const probe = installLoopProbe(loopDir);
  const cluster = await KeyLoadCluster.start({
    root: dir,
    env: { ...probe.env, KeyLoad__Log__Level: opts["log-level"] },
    nodeFlags: [...probe.nodeFlags, ...cpuProfileFlags(), ...extraNodeFlags],
    fromSource: opts["from-source"],
    onSpawn: track,
  });
  let prober: ControlProber | undefined;
  try {
    await cluster.waitReady();
    const leader = await cluster.leader();
    const leaderUrl = cluster.voters[leader]!.httpUrl;
    const endpoints = [leaderUrl, ...cluster.voters.filter((_, i) => i !== leader).map((v) => v.httpUrl)];
    const keys = await createPrincipals(endpoints, cluster.adminKey, principals, tenants);
    const servers: Server[] = cluster.voters.map((v) => ({
      name: v.id,
      pid: v.process.pid,
      loopDir,
      walFiles: [
        join(dir, v.id, "state", "state.sqlite-wal"),
        join(dir, v.id, "raft", "raft-log.sqlite-wal"),
      ],
    }));
    const pids = servers.map((s) => s.pid);
    const walFiles = servers.map((s) => s.walFiles ?? []);
    const values = valuePool(valueBytes);
    const bodies = values.map((value) => Buffer.from(JSON.stringify({ value })));
    const auth = keys.floodKeys.map((k) => `Bearer ${k}`);
    console.log(
      `KeyLoad ${valueBytes} B: voters ${cluster.voters.map((v) => `${v.id} pid ${v.process.pid}`).join(", ")}; leader ${cluster.voters[leader]!.id}`,
    );

    prober = await ControlProber.start({
      system: "keyload",
      origin: leaderUrl,
      apiKey: keys.controlKey,
      intervalMs: controlIntervalMs,
      tag: runTag,
    });
    probers.push(prober);

    const closedTarget = (level: number): LoadTarget => {
      const phase = phaseCounter++;
      return {
        label: `${cluster.voters[leader]!.id} (leader)`,
        pool: trackedPool(leaderUrl, level),
        serverPids: pids,
        idlePids: [],
        request: (seq) => ({
          method: "PUT",
          path: `/v1/catalog/${keyOf(0, seq)}`,
          headers: {
            "content-type": "application/json",
            authorization: auth[seq % auth.length]!,
            "keyload-command-id": `closed-${runTag}-${phase}-${seq}`,
          },
          body: bodies[valueIndex(0, seq)]!.toString(),
        }),
      };
    };
    const closedLoop = async (level: number, seconds: number): Promise<LoadResult> => {
      const target = closedTarget(level);
      try {
        return await runClosedLoop(target, level, seconds, stopping.signal);
      } finally {
        await closePool(target.pool);
      }
    };

    if (warmupSeconds > 0) {
      const warm = await closedLoop(16, warmupSeconds);
      console.log(`  KeyLoad warm-up, not measured: ${int(warm.writesPerSecond)} writes/s at 16 connections`);
    }
    checkStopping();

    const closed: PhaseRecord[] = [];
    for (const level of closedLoopLevels) {
      const stagesBefore = await scrapeStages(leaderUrl, cluster.adminKey);
      const fromMs = Date.now();
      const sampler = new ProcessSampler(pids, [prober.pid], walFiles);
      const result = await closedLoop(level, closedLoopSeconds);
      const sampled = sampler.stop();
      checkStopping();
      const stagesAfter = await scrapeStages(leaderUrl, cluster.adminKey);
      const errors: Record<string, number> = result.errorKinds;
      const r = record({
        system: "keyload",
        phase: "closed-loop",
        valueBytes,
        connections: level,
        servers,
        leader,
        leaderAfter: leader,
        fromMs,
        toMs: Date.now(),
        sampled,
        acked: result.writes,
        seconds: result.seconds,
        latencies: result.latencies,
        errors,
        stages: {
          control: stagesBetween(stagesBefore, stagesAfter, "control"),
          data: stagesBetween(stagesBefore, stagesAfter, "data"),
        },
      });
      console.log(describePhase(r));
      closed.push(r);
      await sleep(500);
    }

    const idle = await measurePhase(
      "keyload",
      "idle",
      valueBytes,
      servers,
      leader,
      prober,
      idleSeconds,
      async () => noLoad(idleSeconds),
      { stages: { url: leaderUrl, apiKey: cluster.adminKey } },
    );
    await sleep(500);

    const floods: PhaseRecord[] = [];
    for (const client of clientModes) {
      const phase = phaseCounter++;
      const before = await scrapeRefusals(
        cluster.voters.map((v) => v.httpUrl),
        cluster.adminKey,
      );
      const flood =
        client === "immediate"
          ? () =>
              runImmediateFlood({
                origins: [leaderUrl],
                connections,
                seconds: floodSeconds,
                signal: stopping.signal,
                write: (connection, seq) => ({
                  method: "PUT",
                  path: `/v1/catalog/${keyOf(connection, seq)}`,
                  headers: {
                    "content-type": "application/json",
                    authorization: auth[connection % auth.length]!,
                    "keyload-command-id": `flood-${runTag}-${phase}-${connection}-${seq}`,
                  },
                  body: bodies[valueIndex(connection, seq)]!,
                }),
                refusal: (status, text) => {
                  if (status !== 429) return undefined;
                  try {
                    return (JSON.parse(text) as { error?: { reason?: string } }).error?.reason ?? "429";
                  } catch {
                    return "429";
                  }
                },
              })
          : () =>
              runClientFlood({
                endpoints,
                apiKeys: keys.floodKeys,
                connections,
                seconds: floodSeconds,
                key: keyOf,
                value: (connection, seq) => values[valueIndex(connection, seq)]!,
                signal: stopping.signal,
              });
      const r = await measurePhase(
        "keyload",
        "flood",
        valueBytes,
        servers,
        leader,
        prober,
        floodSeconds,
        flood,
        {
          client,
          connections,
          leaderNow: () => cluster.leader().catch(() => -1),
          stages: { url: leaderUrl, apiKey: cluster.adminKey },
        },
      );
      const after = await scrapeRefusals(
        cluster.voters.map((v) => v.httpUrl),
        cluster.adminKey,
      );
      const withServer: PhaseRecord = {
        ...r,
        serverRefusals: refusalsBetween(before, after),
      };
      const total = Object.values(withServer.serverRefusals).reduce((a, b) => a + b, 0);
      const final: PhaseRecord = { ...withServer, refusalsPerSecond: total / withServer.seconds };
      console.log(describePhase(final));
      floods.push(final);
      cluster.checkRunning();
      await sleep(1000);
    }
    const admissionBytes = await admissionLimitBytes(leaderUrl, cluster.adminKey);
    return { system: "keyload", valueBytes, idle, closedLoop: closed, floods, admissionBytes };
  } finally {
    if (prober) {
      await prober.stop();
      probers.splice(probers.indexOf(prober), 1);
    }
    await cluster.stop();
    try {
      keepLogs(dir, cluster.voters, valueBytes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** With --logs, each voter's log outlives the temp dir. */
function keepLogs(dir: string, voters: readonly { readonly id: string }[], valueBytes: number): void {
  if (opts.logs === undefined) return;
  const logsDir = resolve(opts.logs);
  mkdirSync(logsDir, { recursive: true });
  for (const { id } of voters) copyFileSync(join(dir, `${id}.log`), join(logsDir, `${valueBytes}-${id}.log`));
}

/**
 * What the leader's admission limits let it hold at once, from its admission status: both command
 * lanes' retained bytes and both HTTP pools' modeled bytes (a request's command counted in both).
 */
async function admissionLimitBytes(httpUrl: string, adminKey: string): Promise<number> {
  const response = await fetch(`${httpUrl}/v1/admin/admission`, {
    headers: { authorization: `Bearer ${adminKey}` },
    signal: AbortSignal.timeout(10_000),
  });
  const status = (await response.json()) as {
    commandAdmission: { limits: Record<string, number> };
    httpAdmission: { limits: Record<string, number> };
  };
  const command = status.commandAdmission.limits;
  const http = status.httpAdmission.limits;
  const sum = [
    command.maxRetainedBytes,
    command.controlMaxRetainedBytes,
    http.maxModeledBytes,
    http.controlMaxModeledBytes,
  ];
  if (!sum.every((n) => typeof n === "number")) throw new Error("the admission status lacks a byte limit");
  return sum.reduce((a, b) => a + b, 0);
}

interface PhaseOptions {
  readonly client?: FloodClient;
  readonly connections?: number;
  /** The leader's index after the phase, to notice an election. */
  readonly leaderNow?: () => Promise<number>;
  /** KeyLoad: the leader, whose stage histogram is read around the phase, and a key to read it with. */
  readonly stages?: { readonly url: string; readonly apiKey: string };
}

/**
 * One phase: the control prober for `seconds` alongside `load` (nothing for the idle phase), with
 * every server's RSS and CPU sampled and its event-loop samples read afterwards. For a flood, the
 * record is printed by the caller once it has the voters' refusal counts.
 */
/** The idle phase's load: none, only the control writes. */
function noLoad(seconds: number): FloodResult {
  return { acked: 0, seconds, latencies: [], refusals: {}, errors: {} };
}

async function measurePhase(
  system: SystemRun["system"],
  phase: "idle" | "flood",
  valueBytes: number,
  servers: readonly Server[],
  leader: number,
  prober: ControlProber,
  seconds: number,
  load: () => Promise<FloodResult>,
  options: PhaseOptions = {},
): Promise<PhaseRecord> {
  const stagesBefore = options.stages
    ? await scrapeStages(options.stages.url, options.stages.apiKey)
    : undefined;
  const fromMs = Date.now();
  const sampler = new ProcessSampler(
    servers.map((s) => s.pid),
    [prober.pid],
    servers.map((s) => s.walFiles ?? []),
  );
  const [control, flood] = await Promise.all([prober.run(seconds), load()]);
  const toMs = fromMs + seconds * 1000;
  const sampled = sampler.stop();
  checkStopping();
  if (system === "keyload" && profileOriginMs > 0) {
    const window = (ms: number): string => ((ms - profileOriginMs) / 1000).toFixed(1);
    console.log(`  ${phase} in the CPU profiles: --from ${window(fromMs)} --to ${window(toMs)}`);
  }
  const leaderAfter = options.leaderNow ? await options.leaderNow() : leader;
  const stagesAfter = options.stages
    ? await scrapeStages(options.stages.url, options.stages.apiKey)
    : undefined;
  const stages =
    stagesBefore && stagesAfter
      ? {
          control: stagesBetween(stagesBefore, stagesAfter, "control"),
          data: stagesBetween(stagesBefore, stagesAfter, "data"),
        }
      : undefined;
  const r = record({
    system,
    phase,
    valueBytes,
    ...(options.client ? { client: options.client } : {}),
    connections: options.connections ?? 0,
    servers,
    leader,
    leaderAfter,
    fromMs,
    toMs,
    sampled,
    acked: flood.acked,
    seconds: phase === "idle" ? seconds : flood.seconds,
    ...(phase === "flood" ? { latencies: flood.latencies } : {}),
    clientRefusals: flood.refusals,
    errors: flood.errors,
    control,
    ...(stages ? { stages } : {}),
  });
  if (phase === "idle" || system === "etcd") console.log(describePhase(r));
  return r;
}

// ---------------------------------------------------------------------------------------------------
// etcd.

/**
 * Compacts etcd's history every two seconds while it runs, as an operator's auto-compaction would:
 * without it a flood of large values keeps every revision and runs into the backend quota.
 */
function compactor(clientUrl: string): () => Promise<void> {
  let stopped = false;
  const probeKey = Buffer.from("compaction-probe").toString("base64");
  const loop = (async () => {
    while (!stopped) {
      await sleep(2000);
      try {
        const range = await fetch(`${clientUrl}/v3/kv/range`, {
          method: "POST",
          body: JSON.stringify({ key: probeKey }),
          signal: AbortSignal.timeout(10_000),
        });
        const revision = ((await range.json()) as { header?: { revision?: string } }).header?.revision;
        if (revision) {
          await fetch(`${clientUrl}/v3/kv/compaction`, {
            method: "POST",
            body: JSON.stringify({ revision }),
            signal: AbortSignal.timeout(30_000),
          }).then((r) => r.body?.cancel());
        }
      } catch {
        // A slow or refused compaction is retried at the next turn.
      }
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

async function runEtcd(valueBytes: number): Promise<SystemRun> {
  const dir = join(root!, `etcd-${valueBytes}`);
  const cluster = await EtcdCluster.start({ root: dir, onSpawn: track });
  let prober: ControlProber | undefined;
  let stopCompactor: (() => Promise<void>) | undefined;
  try {
    await cluster.waitReady();
    const leader = await cluster.leader();
    const leaderUrl = cluster.members[leader]!.clientUrl;
    stopCompactor = compactor(leaderUrl);
    const servers: Server[] = cluster.members.map((m) => ({ name: m.name, pid: m.process.pid }));
    const pids = servers.map((s) => s.pid);
    const tails = valuePool(valueBytes, (v) => Buffer.from(v).toString("base64")).map((value) =>
      Buffer.from(`","value":"${value}"}`),
    );
    const bodyFor = (key: string, valueAt: number): Buffer =>
      Buffer.concat([Buffer.from(`{"key":"${Buffer.from(key).toString("base64")}`), tails[valueAt]!]);
    console.log(
      `etcd ${valueBytes} B: members ${cluster.members.map((m) => `${m.name} pid ${m.process.pid}`).join(", ")}; leader ${cluster.members[leader]!.name}`,
    );

    prober = await ControlProber.start({
      system: "etcd",
      origin: leaderUrl,
      intervalMs: controlIntervalMs,
      tag: runTag,
    });
    probers.push(prober);

    if (warmupSeconds > 0) {
      const pool = trackedPool(leaderUrl, 16);
      try {
        const warm = await runClosedLoop(
          {
            label: "etcd leader",
            pool,
            serverPids: pids,
            idlePids: [],
            request: (seq) => ({
              method: "POST",
              path: "/v3/kv/put",
              headers: { "content-type": "application/json" },
              body: bodyFor(keyOf(0, seq), valueIndex(0, seq)).toString(),
            }),
          },
          16,
          warmupSeconds,
          stopping.signal,
        );
        console.log(`  etcd warm-up, not measured: ${int(warm.writesPerSecond)} writes/s at 16 connections`);
      } finally {
        await closePool(pool);
      }
    }
    checkStopping();

    const idle = await measurePhase(
      "etcd",
      "idle",
      valueBytes,
      servers,
      leader,
      prober,
      idleSeconds,
      async () => noLoad(idleSeconds),
    );
    await sleep(500);
    const flood = await measurePhase(
      "etcd",
      "flood",
      valueBytes,
      servers,
      leader,
      prober,
      floodSeconds,
      () =>
        runImmediateFlood({
          origins: [leaderUrl],
          connections,
          seconds: floodSeconds,
          signal: stopping.signal,
          write: (connection, seq) => ({
            method: "POST",
            path: "/v3/kv/put",
            headers: { "content-type": "application/json" },
            body: bodyFor(keyOf(connection, seq), valueIndex(connection, seq)),
          }),
          // etcd refuses with gRPC ResourceExhausted ("too many requests"), 429 through its gateway.
          refusal: (status, text) => {
            if (status !== 429) return undefined;
            try {
              return (JSON.parse(text) as { message?: string }).message ?? "429";
            } catch {
              return "429";
            }
          },
        }),
      { client: "immediate", connections, leaderNow: () => cluster.leader().catch(() => -1) },
    );
    cluster.checkRunning();
    return { system: "etcd", valueBytes, idle, closedLoop: [], floods: [flood] };
  } finally {
    await stopCompactor?.();
    if (prober) {
      await prober.stop();
      probers.splice(probers.indexOf(prober), 1);
    }
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------
// The run.

function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const etcd = systems.includes("etcd") ? etcdVersion() : null;
  if (systems.includes("etcd") && etcd === null) {
    throw new Error(
      "etcd is not installed: apt-get install -y etcd-server etcd-client (or --systems keyload)",
    );
  }
  mkdirSync(opts.dir, { recursive: true });
  root = mkdtempSync(join(resolve(opts.dir), "keyload-overload-bench-"));

  console.log(`KeyLoad under a flood, side by side with etcd, ${date}`);
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, Linux ${release()}, Node ${process.version}` +
      `${etcd ? `, ${etcd}` : ""}; load average ${loadAverage()}`,
  );
  console.log(
    `flood: ${connections} connections from ${principals} principals over ${tenants} tenants, ` +
      `PUT /v1/catalog/{key} (etcd: /v3/kv/put) over ${int(keySpace)} keys, values of ${valueSizes.join(", ")} bytes, ` +
      `client ${clientModes.join(" then ")}, ${floodSeconds} s; control: one write every ${controlIntervalMs} ms ` +
      `(${idleSeconds} s alone first); everything sent to the leader; temp dir ${root}`,
  );
  console.log(
    `KeyLoad voters: shipped settings (log level ${opts["log-level"]}), ${opts["from-source"] ? "node/src/main.ts through tsx" : "the compiled keyload-node, built now"}, ` +
      `an event-loop probe preloaded (delay beyond its ${LOOP_RESOLUTION_MS} ms timer); ` +
      `closed-loop reference ${closedLoopLevels.length > 0 ? `at ${closedLoopLevels.join(", ")} connections, ${closedLoopSeconds} s each` : "skipped"}; ` +
      `etcd: defaults, its history compacted every 2 s`,
  );

  if (systems.includes("keyload") && !opts["from-source"]) await buildVoter();
  const runs: SystemRun[] = [];
  for (const valueBytes of valueSizes) {
    if (systems.includes("keyload")) runs.push(await runKeyLoad(valueBytes));
    checkStopping();
    if (systems.includes("etcd")) runs.push(await runEtcd(valueBytes));
    checkStopping();
  }

  console.log("");
  console.log(table(runs));
  console.log("");
  console.log("KeyLoad's closed-loop reference (shipped admission limits):");
  for (const run of runs) {
    if (run.closedLoop.length === 0) continue;
    const best = bestClosedLoop(run);
    console.log(
      `  ${run.valueBytes} B: ${run.closedLoop.map((r) => `${r.connections} → ${int(r.goodput)} writes/s`).join(", ")}; best ${int(best?.goodput)} at ${best?.connections}`,
    );
  }
  console.log("");
  for (const run of runs) {
    for (const r of [...(run.idle ? [run.idle] : []), ...run.closedLoop, ...run.floods])
      console.log(jsonLine(r, date));
  }
  console.log("");
  for (const valueBytes of valueSizes) {
    const keyload = runs.find((r) => r.system === "keyload" && r.valueBytes === valueBytes);
    const etcdRun = runs.find((r) => r.system === "etcd" && r.valueBytes === valueBytes);
    for (const line of targets(keyload, etcdRun)) console.log(line);
  }
  const busiest = Math.max(0, ...runs.flatMap((r) => r.floods.map((f) => f.otherCores)));
  console.log(
    `other processes kept up to ${busiest.toFixed(2)} cores busy during a flood` +
      `${busiest > 0.15 ? ": the machine was not quiet, the figures are suspect" : ""}; load average now ${loadAverage()}`,
  );
  console.log(
    `(${SYSTEM_NAMES.keyload} leader marked *; control figures in ms from sending to the end of the answer)`,
  );
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  exitCode = 1;
  console.error(`overload failed: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await cleanup();
}
process.exit(exitCode);
