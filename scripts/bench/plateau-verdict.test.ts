import { describe, expect, it } from "vitest";
import { judgePlateau, theilSenSlope } from "./plateau-verdict.js";

const series = (values: readonly number[], step = 10) => values.map((value, i) => ({ t: i * step, value }));

describe("theilSenSlope", () => {
  it("is the slope of a straight line", () => {
    expect(theilSenSlope(series([0, 5, 10, 15, 20]))).toBeCloseTo(0.5);
  });

  it("ignores one outlying sample", () => {
    expect(theilSenSlope(series([100, 100, 100, 160, 100, 100, 100]))).toBe(0);
  });

  it("is 0 with fewer than two points", () => {
    expect(theilSenSlope(series([42]))).toBe(0);
  });
});

describe("judgePlateau", () => {
  const tolerance = { relative: 0.1, absolute: 8 };

  it("passes a series that climbs in its first half and is flat in its second", () => {
    const j = judgePlateau("rss", series([10, 50, 90, 100, 100, 101, 100, 100]), 40, tolerance);
    expect(j.plateau).toBe(true);
    expect(j.growth).toBe(0);
  });

  it("fails a series that keeps climbing, by the growth across the second half", () => {
    const j = judgePlateau("disk", series([100, 110, 120, 130, 140, 150, 160, 170]), 40, tolerance);
    expect(j.growth).toBeCloseTo(30);
    expect(j.allowed).toBeCloseTo(15.5);
    expect(j.plateau).toBe(false);
  });

  it("allows the absolute growth when it exceeds the relative one", () => {
    const j = judgePlateau("wal", series([1, 2, 3, 4, 5, 6, 7, 8]), 40, tolerance);
    expect(j.allowed).toBe(8);
    expect(j.plateau).toBe(true);
  });
});
