import type { TestProject } from "vitest/node";
import { transpileToDist } from "./transpiled.js";

/**
 * The unit project's global setup: this package and the contract transpiled to their `dist` before any
 * file runs, and again before each rerun in watch mode, so the workers its state machines start run
 * current JavaScript (state/test-fixtures/transpiled-workers.ts).
 */
export default async function setup(project: TestProject): Promise<void> {
  await transpileToDist();
  project.onTestsRerun(async () => {
    await transpileToDist();
  });
}
