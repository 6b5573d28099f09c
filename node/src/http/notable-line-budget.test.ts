import { describe, expect, it } from "vitest";
import { NotableLineBudget } from "./notable-line-budget.js";

describe("NotableLineBudget", () => {
  it("grants so many lines a second, then counts the rest for the next line it grants", () => {
    let now = 0;
    const budget = new NotableLineBudget(3, () => now);
    expect([budget.take(), budget.take(), budget.take()]).toEqual([0, 0, 0]);
    expect([budget.take(), budget.take()]).toEqual([null, null]);
    now = 999;
    expect(budget.take()).toBeNull();
    now = 1_000;
    // A new second: granted, and it says how many lines went to debug since the last one at info.
    expect(budget.take()).toBe(3);
    expect(budget.take()).toBe(0);
    now = 60_000;
    expect(budget.take()).toBe(0);
  });
});
