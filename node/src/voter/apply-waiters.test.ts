import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApplyWaiters, type IndexWaiter, settleApplied } from "./apply-waiters.js";

describe("settleApplied", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const waiter = (index: number, onTimeout: () => void) => ({
    index,
    resolve: vi.fn<() => void>(),
    timer: setTimeout(onTimeout, 1_000),
  });

  it("resolves the waiters at or below the applied index, clears their timers, returns the others", () => {
    const timedOut = vi.fn();
    const a = waiter(3, timedOut);
    const b = waiter(5, timedOut);
    const c = waiter(6, timedOut);
    const left = settleApplied([a, b, c], 5);
    expect(a.resolve).toHaveBeenCalledTimes(1);
    expect(b.resolve).toHaveBeenCalledTimes(1);
    expect(c.resolve).not.toHaveBeenCalled();
    expect(left).toEqual([c]);
    vi.advanceTimersByTime(1_000);
    expect(timedOut).toHaveBeenCalledTimes(1);
  });

  it("returns an empty list as it is", () => {
    const none: IndexWaiter[] = [];
    expect(settleApplied(none, 10)).toBe(none);
  });
});

describe("ApplyWaiters", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("answers a waiter once its index is applied", async () => {
    const w = new ApplyWaiters();
    let done = false;
    void w.wait(7, 100).then(() => {
      done = true;
    });
    expect(w.isEmpty()).toBe(false);
    w.settle(6);
    await Promise.resolve();
    expect(done).toBe(false);
    w.settle(7);
    await Promise.resolve();
    expect(done).toBe(true);
    expect(w.isEmpty()).toBe(true);
  });

  it("answers a waiter after the timeout when its index is not applied, and forgets it", async () => {
    const w = new ApplyWaiters();
    let done = false;
    void w.wait(7, 100).then(() => {
      done = true;
    });
    vi.advanceTimersByTime(99);
    await Promise.resolve();
    expect(done).toBe(false);
    vi.advanceTimersByTime(1);
    await Promise.resolve();
    expect(done).toBe(true);
    expect(w.isEmpty()).toBe(true);
  });

  it("waitsBeyond tells whether one waits for more than is applied", () => {
    const w = new ApplyWaiters();
    expect(w.waitsBeyond(0)).toBe(false);
    void w.wait(4, 100);
    void w.wait(9, 100);
    expect(w.waitsBeyond(8)).toBe(true);
    expect(w.waitsBeyond(9)).toBe(false);
  });

  it("releaseAll answers every one, whatever its index", async () => {
    const w = new ApplyWaiters();
    const a = w.wait(4, 100);
    const b = w.wait(1_000_000, 100);
    w.releaseAll();
    await expect(Promise.all([a, b])).resolves.toEqual([undefined, undefined]);
    expect(w.isEmpty()).toBe(true);
  });
});
