import { runSeed, type SimOptions, type SimResult } from "./simulator.js";

export interface SeedRange {
  readonly from: number;
  readonly count: number;
}

export interface SeedsSummary {
  readonly seeds: number;
  readonly steps: number;
  readonly failures: readonly SimResult[];
}

/** Runs consecutive seeds; `onResult` sees each one as it finishes (progress, early reports). */
export function runSeeds(
  range: SeedRange,
  options: SimOptions = {},
  onResult?: (result: SimResult) => void,
): SeedsSummary {
  const failures: SimResult[] = [];
  let steps = 0;
  for (let seed = range.from; seed < range.from + range.count; seed++) {
    const result = runSeed(seed, options);
    steps += result.steps;
    if (!result.ok) failures.push(result);
    onResult?.(result);
  }
  return { seeds: range.count, steps, failures };
}

/**
 * The failing seeds with their violations: the first `traced` with their traces, the rest a line
 * each (replay one with `--seed S --trace`).
 */
export function formatFailures(failures: readonly SimResult[], traced = 3): string {
  return failures
    .map((f, i) => {
      const message = f.violation?.message ?? `seed ${f.seed} failed`;
      return i < traced ? message : message.split("\n")[0];
    })
    .join("\n\n");
}
