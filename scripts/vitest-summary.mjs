// Runs vitest with a JSON report beside the default one and reads from it how many tests passed and
// failed, and which; shared by `pnpm test` and `npm run verify`, which print the summary line CI reads
// with the failures named just above it, where a log cut to its last lines still shows them.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

/**
 * @param {string[]} args
 * @param {Record<string, string>} [env] added to this process's environment for the run
 * @returns {{ status: number, passed: number, failed: number, failures: string[] }}
 */
export function runVitest(args, env = {}) {
  const root = process.cwd();
  const dir = mkdtempSync(join(tmpdir(), "keyload-vitest-"));
  const report = join(dir, "results.json");
  try {
    const run = spawnSync(
      "pnpm",
      [
        "exec",
        "vitest",
        "run",
        "--reporter=default",
        "--reporter=json",
        `--outputFile.json=${report}`,
        ...args,
      ],
      { stdio: "inherit", env: { ...process.env, ...env } },
    );
    const status = run.status ?? 1;
    try {
      return summaryOf(JSON.parse(readFileSync(report, "utf8")), status, root);
    } catch {
      // No report: vitest itself failed, which counts as one failure.
      return { status: status || 1, passed: 0, failed: 1, failures: ["vitest wrote no report"] };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What a run's JSON report and exit status come to. A run that ran no test fails; one that failed with
 * nothing failed in its report (a file pattern that matched nothing) counts, and names, one failure, so
 * the summary never reads "0 failed" under a failing status.
 * @param {{ numTotalTests: number, numPassedTests: number, numFailedTests: number, numRuntimeErrors?: number, testResults?: { name?: string, status?: string, assertionResults?: { status?: string, fullName?: string }[] }[] }} results
 * @param {number} exitStatus
 * @param {string} root
 * @returns {{ status: number, passed: number, failed: number, failures: string[] }}
 */
export function summaryOf(results, exitStatus, root) {
  const status = results.numTotalTests === 0 && exitStatus === 0 ? 1 : exitStatus;
  const runtimeErrors = results.numRuntimeErrors ?? 0;
  const failures = [
    ...failureNames(results, root),
    ...(runtimeErrors > 0 ? [`${runtimeErrors} error(s) outside any test (vitest's log says which)`] : []),
  ];
  let failed = results.numFailedTests + runtimeErrors + failedWithoutTests(results);
  if (status !== 0 && failed === 0) {
    failed = 1;
    failures.push(
      results.numTotalTests === 0 ? `vitest ran no test (exit ${exitStatus})` : `vitest exited ${status}`,
    );
  }
  return { status, passed: results.numPassedTests, failed, failures };
}

/**
 * Files that failed with no test of theirs failed: a hook or the file's own import threw (a port taken
 * in `beforeAll`), so their tests count as neither passed nor failed, and only this says so.
 * @param {{ testResults?: { status?: string, assertionResults?: { status?: string }[] }[] }} results
 */
export function failedWithoutTests(results) {
  return (results.testResults ?? []).filter(
    (file) =>
      file.status === "failed" && !(file.assertionResults ?? []).some((test) => test.status === "failed"),
  ).length;
}

/**
 * Each failed test as `file > test`, and each file that failed outside its tests as `file (outside
 * its tests)`, the files relative to `root`.
 * @param {{ testResults?: { name?: string, status?: string, assertionResults?: { status?: string, fullName?: string }[] }[] }} results
 * @param {string} root
 */
export function failureNames(results, root) {
  const names = [];
  for (const file of results.testResults ?? []) {
    const path = relative(root, file.name ?? "");
    const failedTests = (file.assertionResults ?? []).filter((test) => test.status === "failed");
    for (const test of failedTests) names.push(`${path} > ${test.fullName}`);
    if (file.status === "failed" && failedTests.length === 0) names.push(`${path} (outside its tests)`);
  }
  return names;
}

/**
 * The summary CI reads: the failures named, then `N passed, N failed` as the last line.
 * @param {{ passed: number, failed: number, failures: string[] }} tests
 */
export function printSummary({ passed, failed, failures }) {
  for (const name of failures) console.log(`failed: ${name}`);
  console.log(`${passed} passed, ${failed} failed`);
}
