import { expect } from "vitest";
import { formatFailures, runSeeds } from "../run-seeds.js";

/** The CI soak: this many seeds of the default profile, split over `SOAK_PARTS` test files. */
export const SOAK_SEEDS = 2000;
export const SOAK_PARTS = 4;

/** Runs part `part` (0-based) of the CI seed range and fails with the seeds and traces of any failure. */
export function soakPart(part: number): void {
  const count = SOAK_SEEDS / SOAK_PARTS;
  const summary = runSeeds({ from: part * count, count });
  expect(
    summary.failures.map((f) => f.seed),
    formatFailures(summary.failures),
  ).toEqual([]);
}
