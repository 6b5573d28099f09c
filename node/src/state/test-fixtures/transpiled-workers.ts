/**
 * A setup file of the unit project: in every test file, workers started from this package's sources run
 * their module's JavaScript in `dist`, which the project's global setup transpiled
 * (build/test-fixtures/transpile-global-setup.ts), rather than through tsx.
 */
import { sep } from "node:path";
import { pathToFileURL } from "node:url";
import { inject } from "vitest";
import { transpiledPath } from "../../build/test-fixtures/transpiled.js";
import { startWorkersTranspiled } from "../worker-thread.js";

/** A module of `src/` as `dist/` holds it; undefined outside `src/` and for test fixtures, not in `dist/`. */
export function distTwin(source: URL): URL | undefined {
  const path = transpiledPath(source);
  if (path === undefined || path.split(sep).includes("test-fixtures")) return undefined;
  return pathToFileURL(path);
}

/**
 * The twins this file's workers start on: none when `dist` is not current, or when NODE_OPTIONS sets
 * export conditions, which a worker keeps whatever its flags (the twin would import TypeScript).
 */
export const workerTwin =
  inject("distCurrent") && !/(^|\s)(--conditions|-C)(\s|=)/.test(process.env.NODE_OPTIONS ?? "")
    ? distTwin
    : undefined;

startWorkersTranspiled(workerTwin);
