import { describe, expect, it } from "vitest";
import { runSeeds } from "./run-seeds.js";

const SEEDS = 10;

describe("crashes under the production driver's handling of Readys", () => {
  it("leave state machines ahead of their stored commit index, which the next start raises", () => {
    let raised = 0;
    let lostWrites = 0;
    const summary = runSeeds({ from: 0, count: SEEDS }, {}, (result) => {
      raised += result.stats.commitsRaised;
      lostWrites += result.stats.lostWrites;
    });
    expect(summary.failures.map((f) => f.violation?.message)).toEqual([]);
    expect(lostWrites).toBeGreaterThan(0);
    expect(raised).toBeGreaterThan(0);
  });
});
