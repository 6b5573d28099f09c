import { describe, expect, it } from "vitest";
import { RetryBudget } from "./retry-budget.js";

function clock(start = 0) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function spend(budget: RetryBudget): number {
  let granted = 0;
  while (budget.tryRetry()) granted++;
  return granted;
}

describe("RetryBudget", () => {
  it("starts with its capacity as a burst of retries", () => {
    const budget = new RetryBudget({ ratio: 0.1, capacity: 5, refillPerSecond: 0 }, clock().now);
    expect(spend(budget)).toBe(5);
    expect(budget.tryRetry()).toBe(false);
  });

  it("once drained, allows retries only while retries < ratio × requests", () => {
    const budget = new RetryBudget({ ratio: 0.1, capacity: 5, refillPerSecond: 0 }, clock().now);
    spend(budget);
    let granted = 0;
    for (let request = 1; request <= 1_000; request++) {
      budget.recordRequest();
      if (budget.tryRetry()) granted++;
      expect(granted).toBeLessThanOrEqual(request * 0.1 + 1e-9);
    }
    // Ten requests earn one retry; float sums may leave the 1,000th request a hair short of its token.
    expect(granted).toBeGreaterThanOrEqual(99);
  });

  it("refills over time at its floor rate, never beyond its capacity", () => {
    const time = clock();
    const budget = new RetryBudget({ ratio: 0, capacity: 3, refillPerSecond: 2 }, time.now);
    spend(budget);
    time.advance(500);
    expect(budget.available()).toBeCloseTo(1);
    expect(spend(budget)).toBe(1);
    time.advance(60_000);
    expect(budget.available()).toBe(3);
    for (let i = 0; i < 100; i++) budget.recordRequest();
    expect(budget.available()).toBe(3);
  });

  it("takes back the token of a retry never sent, never beyond its capacity", () => {
    const time = clock();
    const budget = new RetryBudget({ ratio: 0, capacity: 2, refillPerSecond: 1 }, time.now);
    expect(spend(budget)).toBe(2);
    budget.refundRetry();
    expect(budget.available()).toBe(1);
    time.advance(1_000);
    budget.refundRetry();
    expect(budget.available()).toBe(2);
    expect(spend(budget)).toBe(2);
  });

  it("with no ratio, floor or capacity never retries", () => {
    const time = clock();
    const budget = new RetryBudget({ ratio: 0, capacity: 0, refillPerSecond: 0 }, time.now);
    budget.recordRequest();
    time.advance(10_000);
    expect(budget.tryRetry()).toBe(false);
  });
});
