import { describe, expect, it } from "vitest";
import { RETRY_AFTER_ADVICE_DEFAULTS, RetryAfterAdvice } from "./retry-after-advice.js";

function advice(): { advice: RetryAfterAdvice; tick: (ms: number) => void } {
  let now = 0;
  return {
    advice: new RetryAfterAdvice(RETRY_AFTER_ADVICE_DEFAULTS, () => now),
    tick: (ms) => {
      now += ms;
    },
  };
}

/** One window of `admitted` admissions and `refused` refusals; returns what the last refusal advised. */
function window(a: RetryAfterAdvice, tick: (ms: number) => void, admitted: number, refused: number): void {
  for (let i = 0; i < admitted; i++) a.admitted();
  for (let i = 0; i < refused; i++) a.refused();
  tick(1_000);
}

describe("RetryAfterAdvice", () => {
  it("advises a second while refusals are few", () => {
    const { advice: a, tick } = advice();
    expect(a.refused()).toBe(1);
    window(a, tick, 100, 9);
    expect(a.current()).toBe(1);
  });

  it("doubles its advice each window whose refusals exceed a tenth of its admissions, up to 8 s", () => {
    const { advice: a, tick } = advice();
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      window(a, tick, 100, 11);
      seen.push(a.current());
    }
    expect(seen).toEqual([2, 4, 8, 8, 8]);
  });

  it("holds it while refusals stay between a twentieth and a tenth of the admissions", () => {
    const { advice: a, tick } = advice();
    window(a, tick, 100, 50);
    window(a, tick, 100, 50);
    expect(a.current()).toBe(4);
    window(a, tick, 100, 8);
    window(a, tick, 100, 6);
    expect(a.current()).toBe(4);
  });

  it("takes a second off per quiet window, an idle one too, down to one", () => {
    const { advice: a, tick } = advice();
    for (let i = 0; i < 3; i++) window(a, tick, 10, 100);
    expect(a.current()).toBe(8);
    window(a, tick, 100, 5);
    expect(a.current()).toBe(7);
    // Three windows without a request.
    tick(3_000);
    expect(a.current()).toBe(4);
    tick(60_000);
    expect(a.current()).toBe(1);
  });

  it("counts refusals without admissions as many", () => {
    const { advice: a, tick } = advice();
    window(a, tick, 0, 1);
    expect(a.current()).toBe(2);
  });
});
