import { expect } from "vitest";
import { POWER_LOSS_PROFILE } from "../fault-profile.js";
import { formatFailures, runSeeds } from "../run-seeds.js";
import type { SimOptions } from "../simulator.js";

/** The CI soak: this many seeds of the default profile, split over `SOAK_PARTS` test files. */
export const SOAK_SEEDS = 2000;
export const SOAK_PARTS = 4;

/** The CI soak of the power-loss profile: this many seeds, split over `POWER_LOSS_PARTS` test files. */
export const POWER_LOSS_SEEDS = 4000;
export const POWER_LOSS_PARTS = 2;

/** Runs seeds and fails with the seeds and traces of any failure; returns their power losses and pauses. */
function soakRange(
  from: number,
  count: number,
  options: SimOptions = {},
): { powerLosses: number; pauses: number } {
  let powerLosses = 0;
  let pauses = 0;
  const summary = runSeeds({ from, count }, options, (result) => {
    powerLosses += result.stats.powerLosses;
    pauses += result.stats.pauses;
  });
  expect(
    summary.failures.map((f) => f.seed),
    formatFailures(summary.failures),
  ).toEqual([]);
  return { powerLosses, pauses };
}

/** Runs part `part` (0-based) of the CI seed range of the default profile. */
export function soakPart(part: number): void {
  const count = SOAK_SEEDS / SOAK_PARTS;
  soakRange(part * count, count);
}

/** Runs part `part` (0-based) of the CI seed range of the power-loss profile. */
export function powerLossPart(part: number): void {
  const count = POWER_LOSS_SEEDS / POWER_LOSS_PARTS;
  const { powerLosses, pauses } = soakRange(part * count, count, { profile: POWER_LOSS_PROFILE });
  // The faults the profile is for happened, many times over.
  expect(powerLosses).toBeGreaterThan(count / 2);
  expect(pauses).toBeGreaterThan(count / 2);
}
