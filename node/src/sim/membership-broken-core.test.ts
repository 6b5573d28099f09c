import { describe, expect, it } from "vitest";
import type { InvariantName } from "./invariants.js";
import { runSeed, type SimOptions, type SimResult } from "./simulator.js";
import { EAGER_CONF_CHANGE } from "./test-fixtures/eager-conf-change-node.js";
import { LEARNER_VOTING } from "./test-fixtures/learner-voting-node.js";

const SEARCH_BUDGET = 50;

const MUTANTS: [what: string, options: SimOptions, invariant: InvariantName][] = [
  [
    "a leader that proposes a membership change before its last one is applied",
    EAGER_CONF_CHANGE,
    "one-change-at-a-time",
  ],
  ["a core that lets learners campaign and vote", LEARNER_VOTING, "voters-only"],
];

describe.each(MUTANTS)("%s", (_, options, invariant) => {
  it(`is caught breaking ${invariant} within ${SEARCH_BUDGET} seeds`, () => {
    let failure: SimResult | undefined;
    for (let seed = 0; seed < SEARCH_BUDGET && failure === undefined; seed++) {
      const result = runSeed(seed, options);
      if (!result.ok) failure = result;
    }
    expect(failure, "no seed exposed the broken core").toBeDefined();
    const violation = failure!.violation!;
    expect(violation.invariant, violation.message).toBe(invariant);

    // The same seed with the real core is fine, and the failure replays exactly.
    expect(runSeed(failure!.seed).violation?.message).toBeUndefined();
    expect(runSeed(failure!.seed, options).violation?.message).toBe(violation.message);
  });
});
