/**
 * Soak runner: `pnpm --filter @keyload/node sim -- --seeds 100000 [--from S] [--steps 1000]
 * [--profile default|figure-eight|...|driver|driver-figure-eight|driver-rejoin]`, or `--seed S --trace` to replay one
 * seed with its whole trace. The `driver` profiles run the production driver (driver/driver-simulator.ts)
 * with its own faults; `--steps` does not apply to them. Exits 1 when any seed fails.
 */
import { parseArgs } from "node:util";
import { DRIVER_PROFILES, type DriverProfile } from "./driver/driver-profiles.js";
import { runDriverSeed } from "./driver/driver-simulator.js";
import { PROFILES } from "./fault-profile.js";
import { runSeeds } from "./run-seeds.js";
import { SimUsageError } from "./sim-usage-error.js";
import { runSeed, type SimOptions } from "./simulator.js";

const PROGRESS_EVERY_MS = 5000;
const USAGE =
  "usage: sim [--seeds N] [--from S] [--steps N] [--profile NAME] | sim --seed S [--trace] [--steps N]";

const PROFILE_NAMES = [...Object.keys(PROFILES), ...Object.keys(DRIVER_PROFILES)].join(", ");

async function main(): Promise<number> {
  const { values } = parseOptions();
  if (values.help) {
    console.log(USAGE);
    console.log(`profiles: ${PROFILE_NAMES}`);
    return 0;
  }
  const driverProfile = Object.hasOwn(DRIVER_PROFILES, values.profile)
    ? DRIVER_PROFILES[values.profile]
    : undefined;
  if (driverProfile !== undefined) {
    if (values.seed !== undefined)
      return replayDriver(integer("seed", values.seed), driverProfile, values.trace);
    return soakDriver(integer("from", values.from), integer("seeds", values.seeds), driverProfile);
  }
  const profile = Object.hasOwn(PROFILES, values.profile) ? PROFILES[values.profile] : undefined;
  if (profile === undefined)
    throw new SimUsageError(`unknown profile ${values.profile}; try ${PROFILE_NAMES}`);
  const options: SimOptions = { steps: integer("steps", values.steps), profile };

  if (values.seed !== undefined) return replay(integer("seed", values.seed), options, values.trace);
  return soak(integer("from", values.from), integer("seeds", values.seeds), options);
}

/** The command line's options; a malformed one is a SimUsageError. */
function parseOptions() {
  try {
    return parseArgs({
      // pnpm passes the `--` separating its own options through; it is not ours.
      args: process.argv.slice(2).filter((arg) => arg !== "--"),
      options: {
        seeds: { type: "string", default: "1000" },
        from: { type: "string", default: "0" },
        steps: { type: "string", default: "1000" },
        seed: { type: "string" },
        trace: { type: "boolean", default: false },
        profile: { type: "string", default: "default" },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
    });
  } catch (error) {
    // parseArgs's own errors (an unknown option, a missing value) are usage errors too.
    if (error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))
      throw new SimUsageError(error.message);
    throw error;
  }
}

function replay(seed: number, options: SimOptions, trace: boolean): number {
  const result = runSeed(seed, trace ? { ...options, traceCapacity: Number.POSITIVE_INFINITY } : options);
  if (trace) console.log(result.trace.format());
  console.log(JSON.stringify(result.stats, null, 2));
  if (result.violation !== undefined) {
    // The trace was printed in full above; repeat only the verdict.
    console.log(trace ? result.violation.message.split("\n")[0] : result.violation.message);
    return 1;
  }
  console.log(`seed ${seed}: ok after ${result.steps} steps`);
  return 0;
}

function soak(from: number, count: number, options: SimOptions): number {
  const started = performance.now();
  let lastReport = started;
  let done = 0;
  let failed = 0;
  const summary = runSeeds({ from, count }, options, (result) => {
    done++;
    if (result.violation !== undefined) {
      failed++;
      // The first failure gets its trace; later ones a line each, replayable with --seed S --trace.
      console.log(failed === 1 ? result.violation.message : result.violation.message.split("\n")[0]);
    }
    const now = performance.now();
    if (now - lastReport >= PROGRESS_EVERY_MS) {
      lastReport = now;
      const rate = (done / (now - started)) * 1000;
      console.log(`${done}/${count} seeds, ${rate.toFixed(0)} seeds/s, ${failed} failed`);
    }
  });
  const elapsed = (performance.now() - started) / 1000;
  console.log(
    `${count} seeds from ${from} (${summary.steps} steps) in ${elapsed.toFixed(1)} s: ` +
      `${(count / elapsed).toFixed(0)} seeds/s, ${((elapsed * 1e6) / summary.steps).toFixed(1)} µs/step, ` +
      `${summary.failures.length} failed`,
  );
  if (summary.failures.length === 0) return 0;
  const seeds = summary.failures.map((f) => `${f.seed} (${f.violation?.invariant})`);
  console.log(`failing seeds: ${seeds.join(", ")}`);
  return 1;
}

async function replayDriver(seed: number, profile: DriverProfile, trace: boolean): Promise<number> {
  const result = await runDriverSeed(
    seed,
    trace ? { profile, traceCapacity: Number.POSITIVE_INFINITY } : { profile },
  );
  if (trace) console.log(result.trace.format());
  console.log(JSON.stringify(result.stats, null, 2));
  if (result.violation !== undefined) {
    console.log(trace ? result.violation.message.split("\n")[0] : result.violation.message);
    return 1;
  }
  console.log(`seed ${seed}: ok after ${result.stats.events} events`);
  return 0;
}

async function soakDriver(from: number, count: number, profile: DriverProfile): Promise<number> {
  const started = performance.now();
  let lastReport = started;
  let events = 0;
  const failed: string[] = [];
  for (let seed = from; seed < from + count; seed++) {
    const result = await runDriverSeed(seed, { profile });
    events += result.stats.events;
    if (result.violation !== undefined) {
      failed.push(`${seed} (${result.violation.invariant})`);
      console.log(failed.length === 1 ? result.violation.message : result.violation.message.split("\n")[0]);
    }
    const now = performance.now();
    if (now - lastReport >= PROGRESS_EVERY_MS) {
      lastReport = now;
      const done = seed - from + 1;
      console.log(
        `${done}/${count} seeds, ${((done / (now - started)) * 1000).toFixed(0)} seeds/s, ${failed.length} failed`,
      );
    }
  }
  const elapsed = (performance.now() - started) / 1000;
  console.log(
    `${count} seeds from ${from} (${events} events) in ${elapsed.toFixed(1)} s: ` +
      `${(count / elapsed).toFixed(0)} seeds/s, ${failed.length} failed`,
  );
  if (failed.length === 0) return 0;
  console.log(`failing seeds: ${failed.join(", ")}`);
  return 1;
}

function integer(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new SimUsageError(`--${name} must be a non-negative integer, got ${raw}`);
  return value;
}

try {
  process.exitCode = await main();
} catch (error) {
  if (!(error instanceof SimUsageError)) throw error;
  console.error(`sim: ${error.message}\n${USAGE}`);
  process.exitCode = 2;
}
