/**
 * Endurance: three KeyLoad voters with their shipped settings, except the retention windows, shortened
 * so that the state reaches its steady size within the run, under a steady mixed churn at a fixed rate
 * (endurance-churn.ts). Every sample interval it prints, per voter, RSS, the memory it retains (RSS
 * without the V8 heap's reserve: endurance-sampler.ts), heap, the worst event-loop delay p99, the data
 * dir's bytes and its database files; at the end one verdict line. PASS when every voter's retained
 * memory and data dir have reached a plateau (plateau-verdict.ts: growth across the second half
 * within the tolerance below), no answer was an error (429s the client gave up on are only counted), no
 * voter exited and the churn kept its rate; else FAIL naming why. The exit code follows the verdict.
 * Everything it starts (the voters, the temp dir) is removed at the end, on error and on Ctrl-C.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, release, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_LIMITS } from "@keyload/node/state";
import { Churn, type ChurnCounts, type ChurnOperation, DEFAULT_MIX, OPERATIONS } from "./endurance-churn.js";
import { FILE_GROUP_NAMES, type SampledVoter, sampleVoter, type VoterSample } from "./endurance-sampler.js";
import { buildVoter, KeyLoadCluster } from "./keyload-cluster.js";
import { installLoopProbe, LOOP_RESOLUTION_MS } from "./overload-loop-probe.js";
import { createWriters } from "./overload-principals.js";
import { judgePlateau, type PlateauJudgement, type PlateauTolerance } from "./plateau-verdict.js";
import { scriptArgs } from "./script-args.js";
import { cleanUpOnSignals, type ServerProcess, sleep } from "./server-processes.js";

const MiB = 1024 * 1024;

/**
 * The growth allowed across the second half, whichever is larger. Retained memory: SQLite's page
 * caches and the heap's live objects settle in steps of several MiB (a cache that fills, a pool that
 * grows to its working size), so 10 % or 16 MiB; V8's reserve, whose steps a short run cannot tell
 * from a leak, is not counted. Disk: SQLite files grow to a high-water mark and reuse their free pages, and a
 * snapshot is a copy of the state written beside the one it replaces, so 5 % or 8 MiB (the journal,
 * preallocated, is much of a small data dir). A leak of a hundred bytes per request at the default
 * rate passes either bound within the second half of a 30-minute run.
 */
const RSS_TOLERANCE: PlateauTolerance = { relative: 0.1, absolute: 16 * MiB };
const DISK_TOLERANCE: PlateauTolerance = { relative: 0.05, absolute: 8 * MiB };
/** The share of scheduled slots that must have been sent for the rate to count as kept. */
const MIN_SENT_SHARE = 0.9;

const HELP = `pnpm bench:endurance [-- options]

  --minutes M            how long the churn runs (default 30)
  --rate N               requests per second (default 300)
  --sample-seconds S     between two samples (default 10)
  --retention-ms MS      every canonical retention window the voter has (*RetentionMs) (default 60000)
  --outcome-commands N   OutcomeRetentionCommands, the outcomes kept whatever their age (default 1000)
  --set LIST             more voter settings, Section:Property=value,... (for example
                         Raft:SnapshotIntervalEntries=5000); they override the two above
  --mix LIST             operation weights, op=weight,... over ${OPERATIONS.join(", ")}
                         (default ${OPERATIONS.map((op) => `${op}=${DEFAULT_MIX[op]}`).join(",")})
  --keys N               catalog keys the puts and deletes cycle over (default 2000)
  --value-bytes N        padding of each document (default 512)
  --principals N         writers the requests take in turn, all of one tenant (default 4)
  --max-in-flight N      unanswered requests past which a slot is missed (default 256)
  --dir DIR              where the temp dir goes (default the OS temp dir)
  --from-source          run the voters' sources through tsx instead of the compiled dist
  --help`;

const { values: opts } = parseArgs({
  args: scriptArgs(),
  options: {
    minutes: { type: "string", default: "30" },
    rate: { type: "string", default: "300" },
    "sample-seconds": { type: "string", default: "10" },
    "retention-ms": { type: "string", default: "60000" },
    "outcome-commands": { type: "string", default: "1000" },
    set: { type: "string", default: "" },
    mix: { type: "string", default: "" },
    keys: { type: "string", default: "2000" },
    "value-bytes": { type: "string", default: "512" },
    principals: { type: "string", default: "4" },
    "max-in-flight": { type: "string", default: "256" },
    dir: { type: "string", default: tmpdir() },
    "from-source": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (opts.help) {
  console.log(HELP);
  process.exit(0);
}

function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, not ${raw}`);
  return n;
}
const int = (name: string, raw: string): number => Math.trunc(positive(name, raw));

/** `a=1,b=2` as pairs; empty text gives none. */
function pairs(name: string, raw: string): [string, string][] {
  if (raw.trim() === "") return [];
  return raw.split(",").map((item) => {
    const at = item.indexOf("=");
    if (at <= 0) throw new Error(`--${name} takes name=value items, not ${item}`);
    return [item.slice(0, at).trim(), item.slice(at + 1).trim()];
  });
}

const seconds = positive("minutes", opts.minutes) * 60;
const rate = positive("rate", opts.rate);
const sampleSeconds = positive("sample-seconds", opts["sample-seconds"]);
const keys = int("keys", opts.keys);
const valueBytes = int("value-bytes", opts["value-bytes"]);
const principals = int("principals", opts.principals);
const maxInFlight = int("max-in-flight", opts["max-in-flight"]);

const mix: Record<ChurnOperation, number> = { ...DEFAULT_MIX };
for (const [op, weight] of pairs("mix", opts.mix)) {
  if (!(OPERATIONS as readonly string[]).includes(op)) throw new Error(`--mix: no operation ${op}`);
  const w = Number(weight);
  if (!Number.isFinite(w) || w < 0) throw new Error(`--mix: ${op} needs a weight of 0 or more`);
  mix[op as ChurnOperation] = w;
}

const pascal = (name: string): string => name[0]!.toUpperCase() + name.slice(1);

/**
 * The voter settings, as `KeyLoad__Section__Property` variables: every retention window this voter's
 * canonical limits have (read from them, so a window added later is shortened too), the outcome count,
 * then `--set`.
 */
function voterSettings(): Record<string, string> {
  const env: Record<string, string> = {};
  const retentionMs = String(int("retention-ms", opts["retention-ms"]));
  for (const name of Object.keys(DEFAULT_LIMITS)) {
    if (name.endsWith("RetentionMs")) env[`KeyLoad__Canonical__${pascal(name)}`] = retentionMs;
  }
  env.KeyLoad__Canonical__OutcomeRetentionCommands = String(
    int("outcome-commands", opts["outcome-commands"]),
  );
  for (const [key, value] of pairs("set", opts.set)) {
    const parts = key.split(":");
    if (parts.length !== 2 || parts.some((p) => p === "")) {
      throw new Error(`--set takes Section:Property=value items, not ${key}`);
    }
    env[`KeyLoad__${parts[0]}__${parts[1]}`] = value;
  }
  return env;
}
const settings = voterSettings();

// ---------------------------------------------------------------------------------------------------
// Cleanup: every process and the temp dir, at the end, on error and on Ctrl-C.

const processes: ServerProcess[] = [];
let churn: Churn | undefined;
let root: string | undefined;
let cleaning: Promise<void> | undefined;
const stopping = new AbortController();

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await churn?.stop();
    await Promise.allSettled(processes.map((p) => p.stop()));
    if (root) rmSync(root, { recursive: true, force: true });
  })();
  return cleaning;
}

cleanUpOnSignals(stopping, cleanup, () => root ?? "the temp dir");

// ---------------------------------------------------------------------------------------------------
// Reporting.

const mib = (bytes: number): string => (bytes / MiB).toFixed(1);
const ms = (v: number): string => (Number.isNaN(v) ? "-" : v.toFixed(1));

function sampleRow(s: VoterSample): string {
  const files = FILE_GROUP_NAMES.map((name) => `${name} ${mib(s.files[name] ?? 0)}`).join(" ");
  return (
    `${s.t.toFixed(0).padStart(6)} s  ${s.voter}  rss ${mib(s.rssBytes).padStart(6)}  retained ${mib(s.retainedBytes).padStart(6)}  heap ${(Number.isNaN(s.heapUsedBytes) ? "-" : mib(s.heapUsedBytes)).padStart(6)}` +
    `  loop p99 ${ms(s.loopP99Ms).padStart(6)} ms  disk ${mib(s.diskBytes).padStart(7)}  (${files}) MiB`
  );
}

function churnRow(t: number, now: ChurnCounts, before: ChurnCounts, dt: number): string {
  return (
    `${t.toFixed(0).padStart(6)} s  churn   ${((now.sent - before.sent) / dt).toFixed(0)} req/s sent, ` +
    `${((now.ok - before.ok) / dt).toFixed(0)} ok/s; totals: ${now.ok} ok, ${now.refused} refused (429), ` +
    `${now.errors} errors, ${now.missed} missed`
  );
}

function describe(j: PlateauJudgement): string {
  return `${j.name} ${j.growth >= 0 ? "+" : ""}${mib(j.growth)} MiB (allowed ${mib(j.allowed)}, mean ${mib(j.mean)})`;
}

/** For a data dir that grew: which file groups grew most across the second half, so the cause is named. */
function grownFiles(samples: readonly VoterSample[], halfT: number): string {
  const grew = FILE_GROUP_NAMES.map((name) =>
    judgePlateau(
      name,
      samples.map((s) => ({ t: s.t, value: s.files[name] ?? 0 })),
      halfT,
      DISK_TOLERANCE,
    ),
  )
    .filter((j) => j.growth > MiB / 10)
    .sort((a, b) => b.growth - a.growth);
  return grew.length === 0 ? "" : ` [${grew.map((j) => `${j.name} +${mib(j.growth)}`).join(", ")}]`;
}

// ---------------------------------------------------------------------------------------------------
// The run.

async function main(): Promise<string[]> {
  mkdirSync(opts.dir, { recursive: true });
  root = mkdtempSync(join(resolve(opts.dir), "keyload-endurance-bench-"));
  const loopDir = join(root, "loop");
  mkdirSync(loopDir);
  console.log(`KeyLoad endurance, ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, Linux ${release()}, Node ${process.version}; temp dir ${root}`,
  );
  console.log(
    `churn: ${rate} requests/s for ${seconds / 60} min from ${principals} principals of one tenant, ` +
      `${keys} keys, documents of ${valueBytes} B; mix ${OPERATIONS.map((op) => `${op}=${mix[op]}`).join(",")}`,
  );
  console.log(
    `voters: shipped settings but ${Object.entries(settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}`,
  );
  console.log(
    `samples every ${sampleSeconds} s: RSS, retained (RSS less V8's reserve), heap used, the worst second's event-loop delay p99 (beyond its ` +
      `${LOOP_RESOLUTION_MS} ms timer), data dir and its files; verdict on the second half: retained within ` +
      `${RSS_TOLERANCE.relative * 100} % or ${mib(RSS_TOLERANCE.absolute)} MiB, disk within ` +
      `${DISK_TOLERANCE.relative * 100} % or ${mib(DISK_TOLERANCE.absolute)} MiB`,
  );

  if (!opts["from-source"]) await buildVoter();
  const probe = installLoopProbe(loopDir);
  const cluster = await KeyLoadCluster.start({
    root,
    env: { ...probe.env, ...settings },
    nodeFlags: probe.nodeFlags,
    fromSource: opts["from-source"],
    onSpawn: (p) => processes.push(p),
  });
  await cluster.waitReady();
  const leader = await cluster.leader();
  const endpoints = [
    cluster.voters[leader]!.httpUrl,
    ...cluster.voters.filter((_, i) => i !== leader).map((v) => v.httpUrl),
  ];
  const apiKeys = await createWriters(
    endpoints,
    cluster.adminKey,
    Array.from({ length: principals }, (_, i) => ({ principalId: `endurance-p${i}`, tenantId: "endurance" })),
  );
  const voters: SampledVoter[] = cluster.voters.map((v) => ({
    id: v.id,
    pid: v.process.pid,
    dataDir: join(root!, v.id),
  }));
  churn = new Churn({ endpoints, apiKeys, rate, keys, valueBytes, mix, maxInFlight });
  await churn.prepare();

  const startedMs = Date.now();
  const samples: VoterSample[][] = voters.map((v) => [
    sampleVoter(v, loopDir, startedMs, startedMs, startedMs),
  ]);
  for (const s of samples) console.log(sampleRow(s[0]!));
  churn.start();
  let lastMs = startedMs;
  let lastCounts = churn.snapshot();
  for (let n = 1; n * sampleSeconds <= seconds && !stopping.signal.aborted; n++) {
    await sleep(Math.max(0, startedMs + n * sampleSeconds * 1000 - Date.now()));
    cluster.checkRunning();
    const nowMs = Date.now();
    voters.forEach((v, i) => {
      const s = sampleVoter(v, loopDir, startedMs, lastMs, nowMs);
      samples[i]!.push(s);
      console.log(sampleRow(s));
    });
    const counts = churn.snapshot();
    console.log(churnRow((nowMs - startedMs) / 1000, counts, lastCounts, (nowMs - lastMs) / 1000));
    lastMs = nowMs;
    lastCounts = counts;
  }
  if (stopping.signal.aborted) throw new Error("stopped");
  await churn.stop();
  cluster.checkRunning();
  const counts = churn.snapshot();

  const halfT = seconds / 2;
  const failures: string[] = [];
  voters.forEach((v, i) => {
    const series = samples[i]!;
    const rss = judgePlateau(
      `${v.id} retained`,
      series.map((s) => ({ t: s.t, value: s.retainedBytes })),
      halfT,
      RSS_TOLERANCE,
    );
    const disk = judgePlateau(
      `${v.id} disk`,
      series.map((s) => ({ t: s.t, value: s.diskBytes })),
      halfT,
      DISK_TOLERANCE,
    );
    console.log(`second half: ${describe(rss)}; ${describe(disk)}`);
    if (!rss.plateau) failures.push(`${describe(rss)} grew`);
    if (!disk.plateau) failures.push(`${describe(disk)}${grownFiles(series, halfT)} grew`);
  });
  const kinds = Object.entries(counts.byKind)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  console.log(
    `churn: ${counts.sent} of ${counts.scheduled} slots sent (${kinds}); ${counts.ok} ok, ` +
      `${counts.refused} refused (429), ${counts.errors} errors, ${counts.missed} missed`,
  );
  for (const sample of counts.errorSamples) console.log(`  error: ${sample}`);
  if (counts.errors > 0) failures.push(`${counts.errors} requests failed (first: ${counts.errorSamples[0]})`);
  if (counts.sent < MIN_SENT_SHARE * counts.scheduled) {
    failures.push(`the churn fell behind: ${counts.sent} of ${counts.scheduled} requests sent`);
  }
  return failures;
}

let failures: string[];
try {
  failures = await main();
} catch (err) {
  failures = [err instanceof Error ? err.message : String(err)];
} finally {
  await cleanup();
}
console.log(
  failures.length === 0
    ? `endurance: PASS (retained memory and disk of every voter reached a plateau, no errors, over ${seconds / 60} min)`
    : `endurance: FAIL: ${failures.join("; ")}`,
);
process.exit(failures.length === 0 ? 0 : 1);
