#!/usr/bin/env node
// Runs every vitest project (or those named by --project) and ends with one line
// `N passed, N failed` summing every suite, which CI reads. Exits with vitest's status.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dir = mkdtempSync(join(tmpdir(), "keyload-vitest-"));
const report = join(dir, "results.json");
let status = 1;
try {
  const args = [
    "exec",
    "vitest",
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ];
  const run = spawnSync("pnpm", args, { stdio: "inherit" });
  status = run.status ?? 1;
  let passed = 0;
  let failed = 0;
  try {
    const results = JSON.parse(readFileSync(report, "utf8"));
    passed = results.numPassedTests;
    failed = results.numFailedTests + (results.numRuntimeErrors ?? 0);
    if (results.numTotalTests === 0 && status === 0) status = 1;
  } catch {
    failed += 1;
    status = status || 1;
  }
  console.log(`${passed} passed, ${failed} failed`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
