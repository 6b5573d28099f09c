import { describe, expect, it } from "vitest";
import { runSeed, type SimResult } from "./simulator.js";
import { OWN_ENTRY_COUNTING } from "./test-fixtures/own-entry-counting-node.js";

const SEARCH_BUDGET = 20;

describe("a leader that counts its own entry toward a quorum before it is durable", () => {
  it(`is caught committing an entry a majority does not hold durably within ${SEARCH_BUDGET} seeds`, () => {
    let failure: SimResult | undefined;
    for (let seed = 0; seed < SEARCH_BUDGET && failure === undefined; seed++) {
      const result = runSeed(seed, OWN_ENTRY_COUNTING);
      if (!result.ok) failure = result;
    }
    expect(failure, "no seed exposed the early count").toBeDefined();
    const violation = failure!.violation!;
    expect(violation.invariant).toBe("leader-completeness");
    expect(violation.detail).toContain("disk(s) hold");

    // The same seed with the real core is fine, and the failure replays exactly.
    expect(runSeed(failure!.seed).violation?.message).toBeUndefined();
    expect(runSeed(failure!.seed, OWN_ENTRY_COUNTING).violation?.message).toBe(violation.message);
  });
});
