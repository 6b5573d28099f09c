#!/usr/bin/env node
// What CI runs (`npm run verify`): setup, then the typecheck and the linter, then every test suite.
// A failed typecheck or lint still lets the tests run, and each counts as one failed check in the last
// line, `N passed, N failed`, which is always printed, so CI reads one summary whatever broke.
import { spawnSync } from "node:child_process";
import { CONTAINER_SUBSET_ARGS, CONTAINER_SUBSET_ENV } from "./rf3-container-subset.mjs";
import { runVitest } from "./vitest-summary.mjs";

function step(command, args) {
  return spawnSync(command, args, { stdio: "inherit" }).status === 0;
}

let status = 0;
let passed = 0;
let failed = 0;
if (!step(process.execPath, ["scripts/setup.mjs"])) {
  // Without the dependencies nothing else can run.
  console.log("0 passed, 1 failed");
  process.exit(1);
}
for (const check of ["typecheck", "lint"]) {
  if (step("pnpm", [check])) continue;
  console.error(`verify: pnpm ${check} failed`);
  failed += 1;
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
  if (tests.status !== 0 && status === 0) status = tests.status;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(status);
