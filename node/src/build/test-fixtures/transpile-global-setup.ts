import type { TestProject } from "vitest/node";
import { transpileToDist } from "./transpiled.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Whether this package and the contract are transpiled to `dist` as their sources are now. */
    distCurrent: boolean;
  }
}

/**
 * The unit project's global setup: this package and the contract transpiled to their `dist` before any
 * file runs, and again before each rerun in watch mode, so the workers its state machines start can run
 * current JavaScript (state/test-fixtures/transpiled-workers.ts). A source that does not transpile (one
 * saved half-edited) fails only the tests that load it: the workers run through tsx until it does.
 */
export default async function setup(project: TestProject): Promise<void> {
  const transpile = async () => {
    try {
      await transpileToDist();
      project.provide("distCurrent", true);
    } catch (err) {
      project.provide("distCurrent", false);
      console.warn(`workers start through tsx: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  await transpile();
  project.onTestsRerun(transpile);
}
