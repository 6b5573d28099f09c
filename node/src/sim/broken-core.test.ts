import { describe, expect, it } from "vitest";
import { RaftNode, type RaftOptions } from "../raft/index.js";
import { FIGURE_EIGHT_PROFILE } from "./fault-profile.js";
import { SAFETY_INVARIANTS } from "./invariants.js";
import { runSeed, type SimOptions, type SimResult } from "./simulator.js";

/**
 * Commits entries of earlier terms by counting replicas, which Figure 8 of the Raft paper shows to
 * be unsafe: such an entry can reach a majority, be applied, and then be overwritten by a leader
 * elected without it.
 */
class CountingCommitNode extends RaftNode {
  protected override commitAllowed(_index: number): boolean {
    return true;
  }
}

const SEARCH_BUDGET = 300;

const broken: SimOptions = {
  profile: FIGURE_EIGHT_PROFILE,
  createNode: (options: RaftOptions) => new CountingCommitNode(options),
};

function firstFailure(options: SimOptions): SimResult | undefined {
  for (let seed = 0; seed < SEARCH_BUDGET; seed++) {
    const result = runSeed(seed, options);
    if (!result.ok) return result;
  }
  return undefined;
}

describe("a core that commits earlier-term entries by counting", () => {
  it(`is caught breaking a safety invariant within ${SEARCH_BUDGET} seeds`, () => {
    const failure = firstFailure(broken);
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
    const again = runSeed(failure!.seed, broken);
    expect(again.violation?.message).toBe(violation.message);
  });
});
