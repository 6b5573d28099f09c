import { beforeAll, describe, expect, it } from "vitest";
import { formatFailures, runSeeds, type SeedsSummary } from "./run-seeds.js";
import { runSeed, type SimResult } from "./simulator.js";
import { BROKEN_COMMIT_RULE } from "./test-fixtures/counting-commit-node.js";

/** A trace line: time, step, node, then what happened (see trace.ts). */
const TRACE_LINE = /^ *\d+ #\d+ +\S+ +(tick|deliver|drop|ready|sync|apply|client|member|fault|role|phase)\b/;

// What CI prints when soak seeds fail is this report, so it is checked on a core that really fails.
describe("runSeeds and formatFailures", () => {
  const seen: SimResult[] = [];
  let summary: SeedsSummary;
  beforeAll(() => {
    summary = runSeeds({ from: 30, count: 50 }, BROKEN_COMMIT_RULE, (r) => seen.push(r));
  });

  it("run every seed of the range in order and count their steps", () => {
    expect(seen.map((r) => r.seed)).toEqual(Array.from({ length: 50 }, (_, i) => 30 + i));
    expect(summary.seeds).toBe(50);
    expect(summary.steps).toBe(seen.reduce((n, r) => n + r.steps, 0));
    expect(summary.failures.map((f) => f.seed)).toEqual(seen.filter((r) => !r.ok).map((r) => r.seed));
    expect(summary.failures.length).toBeGreaterThanOrEqual(3);
  });

  it("report each failing seed by number and invariant, the first ones with a readable trace", () => {
    const traced = 2;
    const report = formatFailures(summary.failures, traced).split("\n");
    let expectedLines = summary.failures.length - 1; // blank lines between failures
    for (const [i, f] of summary.failures.entries()) {
      const v = f.violation!;
      const [headline, ...trace] = v.message.split("\n");
      expect(headline).toMatch(
        new RegExp(`^seed ${f.seed}: ${v.invariant} violated at step \\d+ \\(t=\\d+\\): `),
      );
      expect(report).toContain(headline);
      if (i >= traced) {
        expectedLines += 1;
        continue;
      }
      // The trace shows the last 200 events before the violation, one readable line each.
      expect(trace[0]).toMatch(/^\(last 200 of \d+ events\)$/);
      expect(trace.slice(1)).toHaveLength(200);
      for (const line of trace.slice(1)) expect(line).toMatch(TRACE_LINE);
      expect(report.join("\n")).toContain(v.message);
      expectedLines += 1 + trace.length;
    }
    expect(report).toHaveLength(expectedLines);
  });

  it("each failing seed replays alone to the same failure, trace included", () => {
    for (const f of summary.failures) {
      expect(runSeed(f.seed, BROKEN_COMMIT_RULE).violation?.message).toBe(f.violation!.message);
    }
  });

  it("report nothing for seeds that pass", () => {
    const passing = runSeeds({ from: 0, count: 3 });
    expect(passing.failures).toEqual([]);
    expect(formatFailures(passing.failures)).toBe("");
  });
});
