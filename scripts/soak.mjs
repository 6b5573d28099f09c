#!/usr/bin/env node
// Soak runs (`pnpm soak`): rounds of the simulator over fresh seeds and of the RF3 suite's fault tests,
// for a bounded time or number of rounds, stopping at the first failure. Each step's output is kept
// and printed only when the step fails; each round prints a line per step, and the run a summary.
// Interrupted, it stops the step in progress as a Ctrl-C would and leaves nothing running.
import { randomInt } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { exitStatus, handleInterrupts, interruptedBy, runInGroup, signalStatus } from "./process-group.mjs";

const USAGE = `usage: pnpm soak (--minutes M | --rounds N) [--suites sim,rf3] [--seeds N] [--start S]
                 [--steps N] [--profile NAME] [--filter 'kill|pause|partition|faults']

  --minutes M   start no round after M minutes (a round in progress finishes)
  --rounds N    run N rounds at most (with --minutes, whichever comes first)
  --suites      what a round runs, in order: sim (the simulator), rf3 (the RF3 suite's fault tests)
  --seeds N     simulator seeds per round (default 1000); round r runs seeds S+(r-1)N to S+rN-1
  --start S     the first seed (default: a random one above the CI's range, printed)
  --steps N, --profile NAME   passed to the simulator
  --filter F    RF3 test files whose path holds one of F's |-separated words
                (default kill|pause|partition|faults); round r runs them with
                KEYLOAD_FAULT_SEED=S+(r-1)N, which moves every seed of their schedules and workloads`;

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** How long an interrupted step gets to clean up before its processes are killed. */
const GRACE_MS = 30_000;
/** The CI's simulator soak runs the first few thousand seeds; fresh ones by default start above this. */
const FIRST_FRESH_SEED = 1_000_000;

/** @param {string} message */
function usageError(message) {
  console.error(`soak: ${message}\n${USAGE}`);
  process.exit(2);
}

/**
 * @param {string} name
 * @param {string | undefined} raw
 * @param {number} min
 */
function integer(name, raw, min) {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min)
    usageError(`--${name} must be an integer ≥ ${min}, not ${raw}`);
  return value;
}

let parsed;
try {
  parsed = parseArgs({
    // pnpm may pass the `--` that separates its own options along.
    args: process.argv.slice(2).filter((arg) => arg !== "--"),
    options: {
      minutes: { type: "string" },
      rounds: { type: "string" },
      suites: { type: "string", default: "sim,rf3" },
      seeds: { type: "string", default: "1000" },
      start: { type: "string" },
      steps: { type: "string" },
      profile: { type: "string" },
      filter: { type: "string", default: "kill|pause|partition|faults" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  }).values;
} catch (error) {
  usageError(error instanceof Error ? error.message : String(error));
}
if (parsed.help) {
  console.log(USAGE);
  process.exit(0);
}
const minutes = parsed.minutes === undefined ? undefined : Number(parsed.minutes);
if (minutes !== undefined && !(minutes > 0))
  usageError(`--minutes must be a positive number, not ${parsed.minutes}`);
const rounds = integer("rounds", parsed.rounds, 1);
if (minutes === undefined && rounds === undefined) usageError("give --minutes or --rounds (or both)");
const suites = parsed.suites.split(",").map((s) => s.trim());
if (suites.length === 0 || suites.some((s) => s !== "sim" && s !== "rf3")) {
  usageError(`--suites takes sim and rf3, not ${parsed.suites}`);
}
const seeds = /** @type {number} */ (integer("seeds", parsed.seeds, 1));
// Seeds are 32-bit: leave room for a long soak above the start.
const start = integer("start", parsed.start, 0) ?? randomInt(FIRST_FRESH_SEED, 2 ** 31);
const steps = integer("steps", parsed.steps, 1);
const filters = parsed.filter
  .split("|")
  .map((f) => f.trim())
  .filter((f) => f !== "");
if (filters.length === 0) usageError("--filter names no test file");

/**
 * One step's verdict: its summary line, its whole output (printed when it failed) and how many seeds
 * or tests it got through.
 * @typedef {{ ok: boolean, line: string, output: string, count: number }} StepResult
 */

/** @param {number} from @returns {Promise<StepResult>} */
async function simulate(from) {
  const command = ["pnpm", "sim", "--seeds", String(seeds), "--from", String(from)];
  if (steps !== undefined) command.push("--steps", String(steps));
  if (parsed.profile !== undefined) command.push("--profile", parsed.profile);
  const output = await runInGroup(command, {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    graceMs: GRACE_MS,
  });
  // The simulator's own summary: seeds, steps, time and failures.
  const summary = output.stdout
    .split("\n")
    .reverse()
    .find((line) => line.includes(" seeds from "));
  return {
    ok: output.ok,
    line: summary ?? `exited with status ${exitStatus(output)}`,
    output: output.stdall,
    count: output.ok ? seeds : 0,
  };
}

/**
 * @param {string} report where vitest writes its JSON report
 * @param {number} seed moves every seed of the fault tests' schedules and workloads (KEYLOAD_FAULT_SEED)
 * @returns {Promise<StepResult>}
 */
async function faultTests(report, seed) {
  rmSync(report, { force: true });
  const command = [
    "pnpm",
    "exec",
    "vitest",
    "run",
    "--project",
    "rf3",
    "--reporter=default",
    "--reporter=json",
  ];
  command.push(`--outputFile.json=${report}`, ...filters);
  const output = await runInGroup(command, {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, KEYLOAD_FAULT_SEED: String(seed) },
    graceMs: GRACE_MS,
  });
  let results;
  try {
    results = JSON.parse(readFileSync(report, "utf8"));
  } catch {
    const line = `vitest exited with status ${exitStatus(output)} and no report`;
    return { ok: false, line, output: output.stdall, count: 0 };
  }
  const failed = results.numFailedTests + (results.numRuntimeErrors ?? 0);
  return {
    // No test at all means the filter matched no file: a soak that tests nothing has failed too.
    ok: output.ok && results.numTotalTests > 0,
    line: `${results.numPassedTests} passed, ${failed} failed`,
    output: output.stdall,
    count: results.numPassedTests,
  };
}

/** @param {number} ms */
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** @param {number} n */
const roundsOf = (n) => `${n} round${n === 1 ? "" : "s"}`;

handleInterrupts((signal) => console.error(`\nsoak: ${signal}: stopping the step in progress`));

const reportDir = mkdtempSync(join(tmpdir(), "keyload-soak-"));
const began = Date.now();
const deadline = minutes === undefined ? Number.POSITIVE_INFINITY : began + minutes * 60_000;
const bounds = [rounds && roundsOf(rounds), minutes && `${minutes} min`].filter(Boolean).join(" or ");
const roundSteps = suites.map((suite) =>
  suite === "sim" ? `${seeds} simulator seeds` : `the RF3 tests in files matching ${filters.join(", ")}`,
);
console.log(`soak: up to ${bounds}; each round: ${roundSteps.join(", then ")}; seeds from ${start}`);

let completed = 0;
const done = { sim: 0, rf3: 0 };
/** @type {string | undefined} */
let failure;
try {
  for (let round = 1; rounds === undefined || round <= rounds; round++) {
    if (Date.now() >= deadline || interruptedBy()) break;
    for (const suite of suites) {
      const stepStart = Date.now();
      const from = start + (round - 1) * seeds;
      const what =
        suite === "sim"
          ? `sim seeds ${from}-${from + seeds - 1}`
          : `rf3 ${filters.join("|")} with KEYLOAD_FAULT_SEED=${from}`;
      const result =
        suite === "sim" ? await simulate(from) : await faultTests(join(reportDir, "rf3.json"), from);
      const took = seconds(Date.now() - stepStart);
      if (interruptedBy()) {
        console.log(`round ${round}: ${what}: interrupted (${took})`);
        break;
      }
      console.log(`round ${round}: ${what}: ${result.ok ? "ok" : "FAILED"}, ${result.line} (${took})`);
      if (!result.ok) {
        console.log(result.output.trimEnd());
        failure = `round ${round}, ${what}`;
        break;
      }
      done[suite] += result.count;
    }
    if (failure !== undefined || interruptedBy()) break;
    completed++;
  }
} finally {
  rmSync(reportDir, { recursive: true, force: true });
}

const interrupted = interruptedBy();
const totals = [];
if (suites.includes("sim")) totals.push(`${done.sim} seeds simulated`);
if (suites.includes("rf3")) totals.push(`${done.rf3} RF3 tests passed`);
const ending =
  failure !== undefined
    ? `stopped at the first failure (${failure})`
    : interrupted
      ? `interrupted by ${interrupted}`
      : "no failure";
console.log(
  `soak: ${roundsOf(completed)} in ${seconds(Date.now() - began)}, ${totals.join(", ")}: ${ending}`,
);
process.exit(failure !== undefined ? 1 : interrupted ? signalStatus(interrupted) : 0);
