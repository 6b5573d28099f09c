// Runs vitest with a JSON report beside the default one and reads from it how many tests passed and
// failed; shared by `pnpm test` and `npm run verify`, which print the summary line CI reads.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * @param {string[]} args
 * @param {Record<string, string>} [env] added to this process's environment for the run
 * @returns {{ status: number, passed: number, failed: number }}
 */
export function runVitest(args, env = {}) {
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
    let status = run.status ?? 1;
    try {
      const results = JSON.parse(readFileSync(report, "utf8"));
      if (results.numTotalTests === 0 && status === 0) status = 1;
      return {
        status,
        passed: results.numPassedTests,
        failed: results.numFailedTests + (results.numRuntimeErrors ?? 0) + failedWithoutTests(results),
      };
    } catch {
      // No report: vitest itself failed, which counts as one failure.
      return { status: status || 1, passed: 0, failed: 1 };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
