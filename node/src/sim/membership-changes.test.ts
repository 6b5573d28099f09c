import { describe, expect, it } from "vitest";
import { runSeeds } from "./run-seeds.js";
import { runSeed, type SimResult } from "./simulator.js";

// Enough seeds that a joined node comes to lead in at least one: which seeds do depends on every random draw.
const SEEDS = 100;

/** Trace lines of one kind of event, as trace.ts formats them: time, step, node, kind, text. */
function events(result: SimResult, kind: string): { node: string; text: string }[] {
  const out: { node: string; text: string }[] = [];
  for (const line of result.trace.lines()) {
    const m = /^ *\d+ #\d+ +(\S+) +(\S+) (.*)$/.exec(line);
    if (m !== null && m[2] === kind) out.push({ node: m[1]!, text: m[3]! });
  }
  return out;
}

describe("the default profile", () => {
  it("changes membership and loses disks while its faults go on, and every seed keeps every invariant", () => {
    const seen = new Set<string>();
    let wipes = 0;
    const summary = runSeeds({ from: 0, count: SEEDS }, { traceCapacity: Number.POSITIVE_INFINITY }, (r) => {
      wipes += r.stats.wipes;
      for (const { node, text } of events(r, "member")) {
        const change = /^(add-learner|promote|remove) (\S+) -> /.exec(text);
        if (change !== null)
          seen.add(change[1] === "remove" && change[2] === node ? "remove-leader" : change[1]!);
        if (text.startsWith("shut down")) seen.add("shut-down");
      }
      // A node that joined during the run came to lead: it learned the configuration from the log.
      for (const { node, text } of events(r, "role")) {
        if (text.startsWith("leader") && !["n1", "n2", "n3"].includes(node)) seen.add("joined-node-leads");
      }
    });
    expect(summary.failures.map((f) => f.violation?.message)).toEqual([]);
    expect(wipes).toBeGreaterThan(0);
    expect([...seen].sort()).toEqual([
      "add-learner",
      "joined-node-leads",
      "promote",
      "remove",
      "remove-leader",
      "shut-down",
    ]);
  });

  it.each([
    [96107367, 1000],
    [96401349, 10_000],
  ])(
    "seed %i: voters back from crashes after a disk is lost keep the membership change they applied",
    (seed, steps) => {
      expect(runSeed(seed, { steps }).violation?.message).toBeUndefined();
    },
  );

  it.each([96022329, 96022824])(
    "seed %i: a leader that removed itself and stepped down does not campaign on once the removal applies",
    (seed) => {
      expect(runSeed(seed).violation?.message).toBeUndefined();
    },
  );
});
