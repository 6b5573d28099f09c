import { describe, expect, it } from "vitest";
import { FIGURE_EIGHT_PROFILE } from "./fault-profile.js";
import { runSeed, type SimOptions } from "./simulator.js";

const whole: SimOptions = { traceCapacity: Number.POSITIVE_INFINITY };

describe("replay", () => {
  it.each([0, 7, 4242])("seed %i replays with an identical trace and stats", (seed) => {
    const first = runSeed(seed, whole);
    const second = runSeed(seed, whole);
    expect(first.trace.recorded).toBeGreaterThan(first.steps);
    expect(second.trace.lines()).toEqual(first.trace.lines());
    expect(second.stats).toEqual(first.stats);
    expect(second.ok).toBe(first.ok);
  });

  it("replays under another profile too", () => {
    const options = { ...whole, profile: FIGURE_EIGHT_PROFILE };
    expect(runSeed(11, options).trace.lines()).toEqual(runSeed(11, options).trace.lines());
  });

  it("different seeds make different runs", () => {
    expect(runSeed(1, whole).trace.lines()).not.toEqual(runSeed(2, whole).trace.lines());
  });

  it("a short trace keeps the last events of the full one", () => {
    const full = runSeed(3, whole).trace.lines();
    const short = runSeed(3, { traceCapacity: 200 }).trace.lines();
    expect(short).toEqual(full.slice(-200));
  });
});
