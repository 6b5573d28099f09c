import { describe, expect, it } from "vitest";
import { AdaptiveThrottle } from "./adaptive-throttle.js";

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

const options = { k: 2, windowMs: 120_000, buckets: 12 };

function record(throttle: AdaptiveThrottle, accepted: number, refused: number): void {
  for (let i = 0; i < accepted; i++) throttle.record(true);
  for (let i = 0; i < refused; i++) throttle.record(false);
}

describe("AdaptiveThrottle", () => {
  it("rejects with probability max(0, (requests − K·accepts) / (requests + 1))", () => {
    const time = clock();
    const throttle = new AdaptiveThrottle(options, time.now, () => 0);
    expect(throttle.rejectProbability()).toBe(0);
    record(throttle, 10, 10);
    // 20 requests, 10 accepts: 20 − 2·10 = 0.
    expect(throttle.rejectProbability()).toBe(0);
    record(throttle, 0, 30);
    // 50 requests, 10 accepts: (50 − 20) / 51.
    expect(throttle.rejectProbability()).toBeCloseTo(30 / 51);
    const k1 = new AdaptiveThrottle({ ...options, k: 1 }, time.now, () => 0);
    record(k1, 10, 10);
    expect(k1.rejectProbability()).toBeCloseTo(10 / 21);
  });

  it("rejects when the random draw falls below the probability, and counts each rejection as a request", () => {
    const time = clock();
    let draw = 0.5;
    const throttle = new AdaptiveThrottle(options, time.now, () => draw);
    record(throttle, 0, 3);
    // 3 requests, no accepts: 3/4.
    expect(throttle.rejectProbability()).toBe(0.75);
    expect(throttle.shouldReject()).toBe(true);
    expect(throttle.rejectProbability()).toBe(0.8);
    draw = 0.85;
    expect(throttle.shouldReject()).toBe(false);
    expect(throttle.rejectProbability()).toBe(0.8);
  });

  it("never rejects while the cluster accepts at least 1/K of requests", () => {
    const throttle = new AdaptiveThrottle(options, clock().now, () => 0);
    record(throttle, 500, 500);
    expect(throttle.rejectProbability()).toBe(0);
    expect(throttle.shouldReject()).toBe(false);
  });

  it("forgets what slides out of the window, one bucket at a time", () => {
    const time = clock(0);
    const throttle = new AdaptiveThrottle(options, time.now, () => 0);
    record(throttle, 0, 9);
    expect(throttle.rejectProbability()).toBe(0.9);
    time.advance(60_000);
    record(throttle, 0, 9);
    expect(throttle.rejectProbability()).toBeCloseTo(18 / 19);
    // The first 9 are in the bucket that starts at 0: dropped whole once its start is a window ago.
    time.advance(59_999);
    expect(throttle.rejectProbability()).toBeCloseTo(18 / 19);
    time.advance(1);
    expect(throttle.rejectProbability()).toBe(0.9);
    time.advance(60_000);
    expect(throttle.rejectProbability()).toBe(0);
  });

  it("reuses a bucket's slot once its time has passed", () => {
    const time = clock(0);
    const throttle = new AdaptiveThrottle({ k: 2, windowMs: 3_000, buckets: 3 }, time.now, () => 0);
    record(throttle, 0, 5);
    time.advance(3_000);
    // Same slot (0 mod 3), a new slice of time: the old counts are reset, not added to.
    record(throttle, 0, 1);
    expect(throttle.rejectProbability()).toBe(0.5);
  });
});
