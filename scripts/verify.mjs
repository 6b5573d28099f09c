#!/usr/bin/env node
// What CI runs (`npm run verify`): setup, then the typecheck and the linter, then every test suite,
// then the unit and packaging projects again on Node 24 (KEYLOAD_NODE24=0 leaves them out), then a short
// endurance run.
// A failed typecheck or lint still lets the tests run, and each counts as one failed check in the last
// line, `N passed, N failed`, which is always printed, so CI reads one summary whatever broke; the
// lines just above it name each failure.
import { spawnSync } from "node:child_process";
import { runNode24Suites } from "./node24-suites.mjs";
import { CONTAINER_SUBSET_ARGS, CONTAINER_SUBSET_ENV } from "./rf3-container-subset.mjs";
import { printSummary, runVitest } from "./vitest-summary.mjs";

function step(command, args) {
  return spawnSync(command, args, { stdio: "inherit" }).status === 0;
}

let status = 0;
let passed = 0;
let failed = 0;
/** @type {string[]} */
const failures = [];
if (!step(process.execPath, ["scripts/setup.mjs"])) {
  // Without the dependencies nothing else can run.
  printSummary({ passed: 0, failed: 1, failures: ["pnpm run setup"] });
  process.exit(1);
}
for (const check of ["typecheck", "lint"]) {
  if (step("pnpm", [check])) continue;
  console.error(`verify: pnpm ${check} failed`);
  failed += 1;
  failures.push(`pnpm ${check}`);
  status = 1;
}
const runs = [runVitest([])];
// The RF3 suite's container subset, where a Docker engine is required (CI starts one); elsewhere
// `pnpm test:rf3:containers` runs it by hand.
if (process.env.KEYLOAD_REQUIRE_CONTAINER_RUNTIME === "1") {
  runs.push(runVitest(CONTAINER_SUBSET_ARGS, CONTAINER_SUBSET_ENV));
}
for (const tests of runs) {
  passed += tests.passed;
  failed += tests.failed;
  failures.push(...tests.failures);
  if (tests.status !== 0 && status === 0) status = tests.status;
}
// The unit and packaging projects again on Node 24 (node24-suites.mjs). Where Node 24 or its better-sqlite3
// cannot be had they are skipped, saying why; with KEYLOAD_REQUIRE_NODE24=1 (CI) that skip fails.
/** The Node 24 leg, or a failure of its own when preparing it throws (a full disk): the summary still prints. */
function node24Leg() {
  if (process.env.KEYLOAD_NODE24 === "0") {
    return { status: 0, passed: 0, failed: 0, failures: [], skipped: "KEYLOAD_NODE24=0" };
  }
  try {
    return runNode24Suites();
  } catch (err) {
    console.error(`verify: the Node 24 suites failed to run: ${err instanceof Error ? err.message : err}`);
    return {
      status: 1,
      passed: 0,
      failed: 1,
      failures: ["the Node 24 suites (could not run)"],
      version: "24",
    };
  }
}
const node24 = node24Leg();
if (node24.skipped) {
  console.error(`verify: the Node 24 suites skipped: ${node24.skipped}`);
  if (process.env.KEYLOAD_REQUIRE_NODE24 === "1") {
    console.error("verify: KEYLOAD_REQUIRE_NODE24=1, so that skip counts as a failure");
    failed += 1;
    failures.push(`the Node 24 suites (skipped: ${node24.skipped})`);
    if (status === 0) status = 1;
  }
} else {
  console.error(`verify: Node ${node24.version}: ${node24.passed} passed, ${node24.failed} failed`);
  passed += node24.passed;
  failed += node24.failed;
  failures.push(...node24.failures.map((name) => `on Node ${node24.version}: ${name}`));
  if (node24.status !== 0 && status === 0) status = node24.status;
}
// A short endurance run (docs/benchmarks.md, "Endurance"): its first half is the warm-up, so the
// retention windows (10 s) and the log's compaction (every 3,000 entries rather than 100,000) have
// each come round a few times before the second half is judged.
const endurance = [
  ...["--minutes", "1.5", "--rate", "200", "--sample-seconds", "5", "--retention-ms", "10000"],
  ...["--set", "Raft:SnapshotIntervalEntries=3000"],
];
if (step("pnpm", ["bench:endurance", "--", ...endurance])) {
  passed += 1;
} else {
  console.error("verify: pnpm bench:endurance failed");
  failed += 1;
  failures.push("pnpm bench:endurance");
  if (status === 0) status = 1;
}
printSummary({ passed, failed, failures });
process.exit(status);
