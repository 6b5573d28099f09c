import { describe, expect, it } from "vitest";
import { backoffDelay } from "./backoff.js";

const options = { initialMs: 50, maxMs: 1_000, multiplier: 2 };

describe("backoffDelay", () => {
  it("draws below a ceiling that doubles per retry up to the maximum", () => {
    const nearlyOne = () => 0.999_999;
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 10].map((retry) => backoffDelay(retry, options, nearlyOne));
    expect(ceilings).toEqual([49, 99, 199, 399, 799, 999, 999, 999]);
  });

  it("jitters over the whole range below the ceiling", () => {
    expect(backoffDelay(3, options, () => 0)).toBe(0);
    expect(backoffDelay(3, options, () => 0.5)).toBe(100);
    expect(backoffDelay(3, options, () => 0.25)).toBe(50);
  });

  it("follows the multiplier", () => {
    expect(backoffDelay(3, { initialMs: 10, maxMs: 10_000, multiplier: 3 }, () => 0.5)).toBe(45);
  });
});
