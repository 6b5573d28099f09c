/**
 * KeyLoad side by side with etcd (issue 5, part I). In one run it starts three KeyLoad voters and a
 * three-member etcd on loopback, each member with its own temp data dir and fsync on, and drives both
 * with the same closed-loop load generator: 1 KiB values at concurrency 1, 16, 64 and 256, 10 s each,
 * sent to each system's leader (etcd through its `/v3/kv/put` JSON gateway, KeyLoad through
 * `PUT /v1/catalog/{key}`), then once more at one level through a follower of each. Both systems share
 * the disk, and a run pays for the writeback the run before it left behind, so by default each level
 * runs twice per system in ABBA order (etcd, KeyLoad, KeyLoad, etcd at one level, KeyLoad first at the
 * next): each system goes first once per level, and its two passes are reported combined. It prints
 * writes/s, p50/p99 latency and the server processes' CPU seconds per 1,000 writes for both, and the
 * ratio KeyLoad/etcd, against the issue's targets: ≥ 1.0× etcd's throughput at every level, and p50
 * at concurrency 1 no higher than etcd's.
 *
 * Needs Debian's etcd: `apt-get install -y etcd-server etcd-client`.
 *
 *   pnpm --filter @keyload/scripts bench:etcd [-- --seconds 10 --levels 1,16,64,256 --warmup 1 --start-warmup 10
 *     --start-warmup-writes 20000
 *     --follower-level 16 --keys 10000 --systems etcd,keyload --passes 2 --admission open|default
 *     --dir /tmp --cpu-prof DIR --from-source --keep]
 *
 * --passes 1 measures each system once per level, the system going first alternating between levels.
 *
 * Before the first level, each system takes the first level's load for at least --start-warmup
 * seconds and at least --start-warmup-writes writes, not measured (its rate is printed): a fresh
 * cluster's first seconds are its cold start (JIT compilation in the voters and in this load
 * generator, data files growing from empty, every key written for the first time), which falls on one
 * pass of each system and not evenly. The voters' JIT reaches its steady state after a number of
 * writes, not of seconds: on a slow 2-core machine a 10 s warm-up at one writer left KeyLoad's first
 * pass slower than its second, one of 40 s did not (docs/benchmarks.md, "Writes side by side with
 * etcd"). The two systems warm up in alternating slices, the one measured first taking the last, so
 * that neither sits idle before its first pass longer than the ABBA order makes it wait at any other
 * level.
 * --start-warmup 0 --start-warmup-writes 0 measures the cold start.
 *
 * The voters run what the `keyload-node` bin runs, the compiled `node/dist/main.js`, built at the start
 * of the run, as etcd runs its release binary; --from-source runs `node/src/main.ts` through tsx, whose
 * loader costs a few percent of CPU.
 *
 * Everything it starts (processes and the temp dir) is removed at the end, on error and on Ctrl-C,
 * unless --keep is given, which leaves both clusters running and says how to stop them.
 *
 * --admission open (the default) raises the voters' HTTP and command admission limits above the
 * highest concurrency, since the whole load comes from one principal (the bootstrap admin) and the
 * shipped limits (8 HTTP requests and 64 commands per principal, 1 GiB of modeled request bytes with
 * each data request modeled at 8 MiB) would otherwise refuse much of it with 429: the benchmark
 * measures the write path, not the governor. --admission default keeps the
 * shipped limits (refusals then show as errors).
 *
 * --cpu-prof DIR runs the voters with `--cpu-prof` (profiles written to DIR when they stop); pair it
 * with `--systems keyload --levels N --follower-level 0` to profile one level, then summarise with
 * `tsx bench/cpu-profile-summary.ts DIR/<file>.cpuprofile`.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, release, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { combineResults, type LoadResult, type LoadTarget, runClosedLoop } from "./closed-loop-load.js";
import { EtcdCluster, etcdVersion } from "./etcd-cluster.js";
import { buildVoter, KeyLoadCluster } from "./keyload-cluster.js";
import { scriptArgs } from "./script-args.js";
import { cleanUpOnSignals, type ServerProcess, sleep } from "./server-processes.js";

type System = "etcd" | "keyload";
const SYSTEM_NAMES: Record<System, string> = { etcd: "etcd", keyload: "KeyLoad" };
const otherSystem = (system: System): System => (system === "etcd" ? "keyload" : "etcd");
const VALUE_BYTES = 1024;
/** The start warm-up goes on in slices this long until it has made its writes. */
const WARMUP_SLICE_SECONDS = 5;

const { values: opts } = parseArgs({
  args: scriptArgs(),
  options: {
    seconds: { type: "string", default: "10" },
    levels: { type: "string", default: "1,16,64,256" },
    warmup: { type: "string", default: "1" },
    "start-warmup": { type: "string", default: "10" },
    "start-warmup-writes": { type: "string", default: "20000" },
    "follower-level": { type: "string", default: "16" },
    keys: { type: "string", default: "10000" },
    systems: { type: "string", default: "etcd,keyload" },
    passes: { type: "string", default: "2" },
    admission: { type: "string", default: "open" },
    dir: { type: "string", default: tmpdir() },
    "cpu-prof": { type: "string" },
    "from-source": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});

function positive(name: string, raw: string, allowZero = false): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0)) {
    throw new Error(`--${name} must be a ${allowZero ? "non-negative" : "positive"} number, not ${raw}`);
  }
  return n;
}

const seconds = positive("seconds", opts.seconds);
const warmupSeconds = positive("warmup", opts.warmup, true);
const startWarmupSeconds = positive("start-warmup", opts["start-warmup"], true);
const startWarmupWrites = positive("start-warmup-writes", opts["start-warmup-writes"], true);
const levels = opts.levels.split(",").map((l) => Math.trunc(positive("levels", l.trim())));
const followerLevel = Math.trunc(positive("follower-level", opts["follower-level"], true));
const keySpace = Math.trunc(positive("keys", opts.keys));
const systems = opts.systems.split(",").map((s) => s.trim().toLowerCase());
for (const s of systems) {
  if (s !== "etcd" && s !== "keyload") throw new Error(`--systems takes etcd and keyload, not ${s}`);
}
const runEtcd = systems.includes("etcd");
const runKeyLoad = systems.includes("keyload");
if (opts.admission !== "open" && opts.admission !== "default") {
  throw new Error(`--admission is open or default, not ${opts.admission}`);
}
if (opts.passes !== "1" && opts.passes !== "2") throw new Error(`--passes is 1 or 2, not ${opts.passes}`);
const passes = Number(opts.passes);
const maxConcurrency = Math.max(...levels, followerLevel);

// ---------------------------------------------------------------------------------------------------
// Cleanup: every process and the temp dir, at the end, on error and on Ctrl-C.

const processes: ServerProcess[] = [];
const pools: Pool[] = [];
/** What --keep prints about the clusters it leaves running. */
const keepNotes: string[] = [];
let root: string | undefined;
let cleaning: Promise<void> | undefined;
/** Ends a run in progress early (Ctrl-C). */
const stopping = new AbortController();

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.allSettled(pools.map((p) => p.destroy()));
    if (opts.keep) {
      for (const p of processes) p.detach();
      if (processes.length > 0) {
        console.log("\n--keep: left running (stop each by its pid with kill, then remove the dir):");
        for (const p of processes) console.log(`  ${p.name} pid ${p.pid}, log ${p.logFile}`);
        for (const line of keepNotes) console.log(`  ${line}`);
      }
      if (root) console.log(`  dir: ${root}`);
      return;
    }
    await Promise.allSettled(processes.map((p) => p.stop()));
    if (root) rmSync(root, { recursive: true, force: true });
  })();
  return cleaning;
}

cleanUpOnSignals(stopping, cleanup, () => root ?? "the temp dir");

// ---------------------------------------------------------------------------------------------------
// Targets.

const runId = randomBytes(6).toString("hex");
const value = randomBytes(VALUE_BYTES).toString("base64").slice(0, VALUE_BYTES);
const keyLoadBody = JSON.stringify({ value });
const etcdValue = Buffer.from(value).toString("base64");

function poolFor(origin: string): Pool {
  const pool = new Pool(origin, {
    connections: maxConcurrency,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
  });
  pools.push(pool);
  return pool;
}

const poolsByOrigin = new Map<string, Pool>();
function sharedPool(origin: string): Pool {
  let pool = poolsByOrigin.get(origin);
  if (!pool) {
    pool = poolFor(origin);
    poolsByOrigin.set(origin, pool);
  }
  return pool;
}

function keyLoadTarget(
  cluster: KeyLoadCluster,
  voter: number,
  role: string,
  idlePids: readonly number[],
): LoadTarget {
  const v = cluster.voters[voter]!;
  const authorization = `Bearer ${cluster.adminKey}`;
  return {
    label: `${v.id} (${role})`,
    pool: sharedPool(v.httpUrl),
    serverPids: cluster.pids,
    idlePids,
    request: (seq) => ({
      method: "PUT",
      path: `/v1/catalog/bench-${seq % keySpace}`,
      headers: {
        "content-type": "application/json",
        authorization,
        "keyload-command-id": `bench-${runId}-${seq}`,
      },
      body: keyLoadBody,
    }),
  };
}

function etcdTarget(
  cluster: EtcdCluster,
  member: number,
  role: string,
  idlePids: readonly number[],
): LoadTarget {
  const m = cluster.members[member]!;
  return {
    label: `${m.name} (${role})`,
    pool: sharedPool(m.clientUrl),
    serverPids: cluster.pids,
    idlePids,
    request: (seq) => ({
      method: "POST",
      path: "/v3/kv/put",
      headers: { "content-type": "application/json" },
      body: `{"key":"${Buffer.from(`bench-${seq % keySpace}`).toString("base64")}","value":"${etcdValue}"}`,
    }),
  };
}

// ---------------------------------------------------------------------------------------------------
// Report.

interface Row {
  readonly level: number;
  readonly via: "leader" | "follower";
  /** Which system ran first (in ABBA order it also ran last). */
  readonly first: System;
  /** Each system's passes combined. */
  readonly etcd?: LoadResult;
  readonly keyload?: LoadResult;
  /** KeyLoad/etcd writes/s of each pass, in the order the passes ran. */
  readonly passRatios: readonly number[];
}

const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "—");
const ms = (n: number): string => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : "—");
const cpu = (n: number): string => (Number.isFinite(n) ? n.toFixed(3) : "—");
const ratio = (a: number | undefined, b: number | undefined): string =>
  a !== undefined && b !== undefined && Number.isFinite(a) && Number.isFinite(b) && b > 0
    ? `${(a / b).toFixed(2)}×`
    : "—";

function describeRun(system: string, r: LoadResult): string {
  const errs =
    r.errors > 0
      ? `, ${int(r.errors)} errors (${Object.entries(r.errorKinds)
          .map(([k, n]) => `${k} ×${n}`)
          .join(", ")})`
      : "";
  return (
    `  ${system.padEnd(8)} c=${String(r.concurrency).padEnd(4)} ${r.label.padEnd(20)} ` +
    `${int(r.writesPerSecond).padStart(7)} writes/s  p50 ${ms(r.p50)} ms  p99 ${ms(r.p99)} ms  ` +
    `server CPU ${cpu(r.serverCpuPer1000)} s/1k  (load generator ${cpu(r.clientCpuPer1000)} s/1k, ` +
    `others ${r.otherCores.toFixed(2)} cores)${errs}`
  );
}

function table(rows: readonly Row[]): string {
  const lines = [
    "| concurrency | sent to | first | etcd writes/s | KeyLoad writes/s | ratio | ratio per pass | etcd p50 / p99 ms | KeyLoad p50 / p99 ms | etcd CPU s/1k writes | KeyLoad CPU s/1k writes | CPU ratio | errors etcd / KeyLoad | other load, cores |",
    "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const { level, via, first, etcd: e, keyload: k, passRatios } of rows) {
    const perPass = passRatios.length > 0 ? passRatios.map((r) => `${r.toFixed(2)}×`).join(", ") : "—";
    lines.push(
      `| ${level} | ${via} | ${SYSTEM_NAMES[first]} | ${e ? int(e.writesPerSecond) : "—"} | ${k ? int(k.writesPerSecond) : "—"} | ` +
        `${ratio(k?.writesPerSecond, e?.writesPerSecond)} | ${perPass} | ` +
        `${e ? `${ms(e.p50)} / ${ms(e.p99)}` : "—"} | ${k ? `${ms(k.p50)} / ${ms(k.p99)}` : "—"} | ` +
        `${e ? cpu(e.serverCpuPer1000) : "—"} | ${k ? cpu(k.serverCpuPer1000) : "—"} | ` +
        `${ratio(k?.serverCpuPer1000, e?.serverCpuPer1000)} | ${e ? int(e.errors) : "—"} / ${k ? int(k.errors) : "—"} | ` +
        `${e ? e.otherCores.toFixed(2) : "—"} / ${k ? k.otherCores.toFixed(2) : "—"} |`,
    );
  }
  return lines.join("\n");
}

function verdicts(rows: readonly Row[]): string[] {
  const out: string[] = [];
  for (const { level, via, etcd: e, keyload: k } of rows) {
    if (via !== "leader" || !e || !k) continue;
    const r = k.writesPerSecond / e.writesPerSecond;
    out.push(
      `throughput at concurrency ${level}: ${r.toFixed(2)}× etcd (target ≥ 1.00×) ${r >= 1 ? "✓ met" : "✗ missed"}`,
    );
    if (level === 1) {
      out.push(
        `p50 at concurrency 1: KeyLoad ${ms(k.p50)} ms vs etcd ${ms(e.p50)} ms (target ≤ etcd's) ` +
          `${k.p50 <= e.p50 ? "✓ met" : "✗ missed"}`,
      );
    }
  }
  return out;
}

function machineFacts(etcd: string | null): string {
  const model = cpus()[0]?.model ?? "unknown CPU";
  const memGiB = (totalmem() / 2 ** 30).toFixed(0);
  let fs = "";
  try {
    const dir = resolve(opts.dir);
    const mounts = readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .map((l) => l.split(" "))
      .filter((f) => f.length > 2 && (dir === f[1] || dir.startsWith(f[1] === "/" ? "/" : `${f[1]}/`)))
      .sort((a, b) => b[1]!.length - a[1]!.length);
    if (mounts[0]) fs = `, data dirs on ${mounts[0][2]} (${mounts[0][0]})`;
  } catch {
    // No /proc/mounts: leave it out.
  }
  return (
    `${cpus().length} × ${model}, ${memGiB} GiB, Linux ${release()}, Node ${process.version}` +
    `${etcd ? `, ${etcd}` : ""}${fs}`
  );
}

// ---------------------------------------------------------------------------------------------------
// The run.

async function main(): Promise<void> {
  const etcd = runEtcd ? etcdVersion() : null;
  if (runEtcd && etcd === null) {
    throw new Error(
      "etcd is not installed: apt-get update && apt-get install -y etcd-server etcd-client (or --systems keyload)",
    );
  }
  mkdirSync(opts.dir, { recursive: true });
  root = mkdtempSync(join(resolve(opts.dir), "keyload-etcd-bench-"));
  const track = (p: ServerProcess): void => {
    processes.push(p);
  };

  const admissionEnv: Record<string, string> = {};
  if (opts.admission === "open") {
    const n = String(Math.max(1024, maxConcurrency * 2));
    for (const name of ["MaxRequests", "MaxRequestsPerTenant", "MaxRequestsPerPrincipal"]) {
      admissionEnv[`KeyLoad__HttpAdmission__${name}`] = n;
    }
    for (const name of ["MaxCommands", "MaxCommandsPerTenant", "MaxCommandsPerPrincipal"]) {
      admissionEnv[`KeyLoad__CommandAdmission__${name}`] = n;
    }
    // Every data request is modeled at DataRequestBytes (8 MiB) until its body is read: room for all.
    admissionEnv.KeyLoad__HttpAdmission__MaxModeledBytes = String(Number(n) * 16 * 2 ** 20);
  }
  const nodeFlags: string[] = [];
  if (opts["cpu-prof"]) {
    const profDir = resolve(opts["cpu-prof"]);
    mkdirSync(profDir, { recursive: true });
    nodeFlags.push("--cpu-prof", `--cpu-prof-dir=${profDir}`);
  }

  console.log(`KeyLoad vs etcd, ${new Date().toISOString()}`);
  console.log(`machine: ${machineFacts(etcd)}`);
  console.log(
    `load: ${VALUE_BYTES}-byte values over ${int(keySpace)} keys, closed loop, levels ${levels.join(", ")}, ` +
      `${seconds} s each after ${warmupSeconds} s of warm-up at the same level (and at least ${startWarmupSeconds} s and ${int(startWarmupWrites)} writes per system before the first level), ` +
      `${passes === 2 ? "two passes per system in ABBA order" : "one pass per system"}, the first system alternating by level; temp dir ${root}`,
  );
  console.log(
    `KeyLoad voters: ${opts["from-source"] ? "node/src/main.ts through tsx (--from-source)" : "the compiled keyload-node (node/dist/main.js), built now"}`,
  );
  console.log(
    `KeyLoad admission: ${opts.admission === "open" ? `request and command limits raised to ${Object.values(admissionEnv)[0]}, modeled bytes to ${Number(admissionEnv.KeyLoad__HttpAdmission__MaxModeledBytes) / 2 ** 30} GiB (one principal sends everything)` : "shipped defaults"}`,
  );

  if (runKeyLoad && !opts["from-source"]) await buildVoter();
  const started = performance.now();
  const [keyload, etcdCluster] = await Promise.all([
    runKeyLoad
      ? KeyLoadCluster.start({
          root: join(root, "keyload"),
          env: admissionEnv,
          nodeFlags,
          fromSource: opts["from-source"],
          onSpawn: track,
        })
      : undefined,
    runEtcd ? EtcdCluster.start({ root: join(root, "etcd"), onSpawn: track }) : undefined,
  ]);
  if (keyload) {
    keepNotes.push(
      `KeyLoad: ${keyload.voters.map((v) => v.httpUrl).join(" ")}, admin key ${keyload.adminKey}`,
    );
  }
  if (etcdCluster) keepNotes.push(`etcd: ${etcdCluster.members.map((m) => m.clientUrl).join(" ")}`);
  await Promise.all([keyload?.waitReady(), etcdCluster?.waitReady()]);
  console.log(`ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (keyload) {
    console.log(`KeyLoad voters: ${keyload.voters.map((v) => `${v.id} pid ${v.process.pid}`).join(", ")}`);
  }
  if (etcdCluster) {
    console.log(
      `etcd members: ${etcdCluster.members.map((m) => `${m.name} pid ${m.process.pid}`).join(", ")}`,
    );
  }

  const targetOf = async (system: System, via: "leader" | "follower"): Promise<LoadTarget | undefined> => {
    const member = (leader: number): number => (via === "leader" ? leader : (leader + 1) % 3);
    if (system === "keyload") {
      return keyload && keyLoadTarget(keyload, member(await keyload.leader()), via, etcdCluster?.pids ?? []);
    }
    return (
      etcdCluster && etcdTarget(etcdCluster, member(await etcdCluster.leader()), via, keyload?.pids ?? [])
    );
  };

  const measure = async (
    system: System,
    level: number,
    via: "leader" | "follower",
  ): Promise<LoadResult | undefined> => {
    const target = await targetOf(system, via);
    if (target === undefined) return undefined;
    if (warmupSeconds > 0) await runClosedLoop(target, level, warmupSeconds, stopping.signal);
    const from = (performance.now() - started) / 1000;
    const result = await runClosedLoop(target, level, seconds, stopping.signal);
    if (opts["cpu-prof"] && system === "keyload") {
      const to = (performance.now() - started) / 1000;
      console.log(`  (for cpu-profile-summary: --from ${from.toFixed(1)} --to ${to.toFixed(1)})`);
    }
    if (stopping.signal.aborted) throw new Error("stopped");
    console.log(describeRun(SYSTEM_NAMES[system], result));
    for (const sample of result.errorSamples) console.log(`      e.g. ${sample}`);
    (system === "keyload" ? keyload : etcdCluster)?.checkRunning();
    await sleep(500);
    return result;
  };

  /** Runs one level: ABBA (or AB), the system going first alternating from one level to the next. */
  const compare = async (level: number, via: "leader" | "follower", first: System): Promise<Row> => {
    const second = otherSystem(first);
    const order = passes === 2 ? [first, second, second, first] : [first, second];
    const results: Record<System, LoadResult[]> = { etcd: [], keyload: [] };
    for (const system of order) {
      const result = await measure(system, level, via);
      if (result) results[system].push(result);
    }
    const paired = results.etcd.length === results.keyload.length;
    return {
      level,
      via,
      first,
      etcd: results.etcd.length > 0 ? combineResults(results.etcd) : undefined,
      keyload: results.keyload.length > 0 ? combineResults(results.keyload) : undefined,
      passRatios: paired
        ? results.keyload.map((k, i) => k.writesPerSecond / results.etcd[i]!.writesPerSecond)
        : [],
    };
  };
  const firstAt = (i: number): System => (i % 2 === 0 ? "etcd" : "keyload");

  if (startWarmupSeconds > 0 || startWarmupWrites > 0) {
    // Slices alternate between the systems, the one measured first taking the last, until both have
    // made their writes: neither waits before its first pass longer than one slice and one pass, as
    // in the ABBA order that follows. Warming each up whole, one after the other, left the second
    // system's voters idle for over a minute before their first pass (the other's warm-up and pass),
    // and on this host a KeyLoad cluster runs its next 10-20 s slower after such an idle while etcd
    // does not (docs/benchmarks.md). The system measured first still warms up last, so its first
    // pass, not the other's, pays for the writeback its warm-up leaves.
    const warming: { system: System; target: LoadTarget; slices: LoadResult[] }[] = [];
    for (const system of [otherSystem(firstAt(0)), firstAt(0)]) {
      const target = await targetOf(system, "leader");
      if (target !== undefined) warming.push({ system, target, slices: [] });
    }
    const writes = (slices: readonly LoadResult[]): number => slices.reduce((n, r) => n + r.writes, 0);
    while (warming.some((w) => w.slices.length === 0 || writes(w.slices) < startWarmupWrites)) {
      for (const w of warming) {
        const slice =
          w.slices.length === 0 && startWarmupSeconds > 0 ? startWarmupSeconds : WARMUP_SLICE_SECONDS;
        const run = await runClosedLoop(w.target, levels[0]!, slice, stopping.signal);
        if (stopping.signal.aborted) throw new Error("stopped");
        if (run.writes === 0)
          throw new Error(`${SYSTEM_NAMES[w.system]} made no writes in ${slice} s of warm-up`);
        w.slices.push(run);
      }
    }
    for (const w of warming) {
      const cold = combineResults(w.slices);
      console.log(`warm-up after start, not measured: ${describeRun(SYSTEM_NAMES[w.system], cold).trim()}`);
    }
    await sleep(500);
  }

  const rows: Row[] = [];
  for (const [i, level] of levels.entries()) rows.push(await compare(level, "leader", firstAt(i)));
  if (followerLevel > 0) {
    console.log(
      `through a follower (KeyLoad forwards to its leader; etcd's follower forwards the proposal):`,
    );
    rows.push(await compare(followerLevel, "follower", firstAt(levels.length)));
  }

  console.log("");
  console.log(table(rows));
  console.log("");
  for (const line of verdicts(rows)) console.log(line);
  const busiest = Math.max(...rows.flatMap((r) => [r.etcd?.otherCores ?? 0, r.keyload?.otherCores ?? 0]));
  console.log(
    `other processes (anything but the six servers and this script, kernel threads included) kept up to ` +
      `${busiest.toFixed(2)} cores busy during a run${busiest > 0.15 ? ": the machine was not quiet, the figures are suspect" : ""}`,
  );
  const leaderRows = rows.filter((r) => r.via === "leader" && r.etcd && r.keyload);
  const follower = rows.find((r) => r.via === "follower");
  const sameLevel = leaderRows.find((r) => r.level === follower?.level);
  if (follower?.keyload && sameLevel?.keyload) {
    console.log(
      `KeyLoad through a follower at concurrency ${follower.level}: ` +
        `${ratio(follower.keyload.writesPerSecond, sameLevel.keyload.writesPerSecond)} of its leader throughput, ` +
        `p50 ${ms(follower.keyload.p50)} ms vs ${ms(sameLevel.keyload.p50)} ms`,
    );
  }
  if (follower?.etcd && sameLevel?.etcd) {
    console.log(
      `etcd through a follower at concurrency ${follower.level}: ` +
        `${ratio(follower.etcd.writesPerSecond, sameLevel.etcd.writesPerSecond)} of its leader throughput, ` +
        `p50 ${ms(follower.etcd.p50)} ms vs ${ms(sameLevel.etcd.p50)} ms`,
    );
  }
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  exitCode = 1;
  console.error(`etcd-compare failed: ${err instanceof Error ? err.message : String(err)}`);
} finally {
  await cleanup();
}
if (opts["cpu-prof"] && !opts.keep) console.log(`CPU profiles in ${resolve(opts["cpu-prof"])}`);
process.exit(exitCode);
