import { describe, expect, it } from "vitest";
import { parseRetryAfter, retryAfterDelay } from "./retry-after.js";

describe("parseRetryAfter", () => {
  const now = Date.UTC(2030, 0, 1, 12, 0, 0);

  it("reads delay-seconds as milliseconds", () => {
    expect(parseRetryAfter("1", now)).toBe(1_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it("reads an HTTP-date relative to now, a past one as zero", () => {
    expect(parseRetryAfter("Tue, 01 Jan 2030 12:00:05 GMT", now)).toBe(5_000);
    expect(parseRetryAfter("Tue, 01 Jan 2030 11:00:00 GMT", now)).toBe(0);
  });

  it("reads delay-seconds too many to count as the longest wait it counts, never Infinity", () => {
    const huge = parseRetryAfter("9".repeat(400), now);
    expect(huge).toBe(Number.MAX_SAFE_INTEGER);
    // Infinity would make the spread NaN, a wait that fails every comparison and fires at once.
    expect(retryAfterDelay(huge!, () => 0)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("ignores an absent or unreadable value", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-1", now)).toBeUndefined();
  });
});

describe("retryAfterDelay", () => {
  it("waits out Retry-After, and up to as long again at random", () => {
    expect(retryAfterDelay(1_000, () => 0)).toBe(1_000);
    expect(retryAfterDelay(1_000, () => 0.5)).toBe(1_500);
    expect(retryAfterDelay(1_000, () => 0.999)).toBe(1_999);
    expect(retryAfterDelay(0, () => 0.7)).toBe(0);
  });

  it("spreads callers refused together over a second Retry-After", () => {
    let seed = 1;
    const random = (): number => {
      seed = (seed * 48_271) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const delays = Array.from({ length: 1_000 }, () => retryAfterDelay(1_000, random));
    const perTenth = new Array<number>(10).fill(0);
    for (const d of delays) perTenth[Math.floor((d - 1_000) / 100)]! += 1;
    // Without the spread every one comes back in the first tenth.
    expect(Math.max(...perTenth)).toBeLessThan(150);
  });
});
