import { describe, expect, it } from "vitest";
import { FIGURE_EIGHT_PROFILE } from "./fault-profile.js";
import { SAFETY_INVARIANTS } from "./invariants.js";
import { runSeed, type SimOptions, type SimResult } from "./simulator.js";
import { BROKEN_COMMIT_RULE } from "./test-fixtures/counting-commit-node.js";
import { EARLY_READ } from "./test-fixtures/early-read-node.js";
import { LatestEpochNode } from "./test-fixtures/latest-epoch-node.js";

const SEARCH_BUDGET = 300;

function firstFailure(options: SimOptions): SimResult | undefined {
  for (let seed = 0; seed < SEARCH_BUDGET; seed++) {
    const result = runSeed(seed, options);
    if (!result.ok) return result;
  }
  return undefined;
}

describe("a core that commits earlier-term entries by counting", () => {
  it(`is caught breaking a safety invariant within ${SEARCH_BUDGET} seeds`, () => {
    const failure = firstFailure(BROKEN_COMMIT_RULE);
    expect(failure, "no seed exposed the broken commit rule").toBeDefined();
    const violation = failure!.violation!;
    expect(SAFETY_INVARIANTS).toContain(violation.invariant);
    expect(violation.message).toContain(`seed ${failure!.seed}:`);
    expect(violation.message).toContain(violation.invariant);
    expect(violation.trace.split("\n").length).toBeGreaterThan(100);

    // The same seed with the real core is fine: the violation is the mutant's, not the simulator's.
    const real = runSeed(failure!.seed, { profile: FIGURE_EIGHT_PROFILE });
    expect(real.violation?.message).toBeUndefined();

    // And the failure replays exactly.
    const again = runSeed(failure!.seed, BROKEN_COMMIT_RULE);
    expect(again.violation?.message).toBe(violation.message);
  });
});

describe("a leader that takes a late refusal for news", () => {
  it(`is caught lowering a follower's match within ${SEARCH_BUDGET} seeds`, () => {
    const options: SimOptions = { createNode: (o) => new LatestEpochNode(o) };
    const failure = firstFailure(options);
    expect(failure, "no seed exposed the lowered match").toBeDefined();
    expect(failure!.violation!.invariant).toBe("monotonic-progress");
    expect(failure!.violation!.message).toMatch(/lowered its match for \S+ from \d+ to \d+/);
    expect(runSeed(failure!.seed).violation?.message).toBeUndefined();
  });
});

describe("a new leader that serves reads before an entry of its term commits", () => {
  it(`is caught serving a stale read within ${SEARCH_BUDGET} seeds`, () => {
    const failure = firstFailure(EARLY_READ);
    expect(failure, "no seed exposed the early read").toBeDefined();
    expect(failure!.violation!.invariant).toBe("linearizable-read");
    expect(runSeed(failure!.seed).violation?.message).toBeUndefined();
  });
});
