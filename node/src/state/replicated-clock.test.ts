import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  advanceClock,
  LEADER_CHANGE_MAX_STEP_MS,
  type LeaderStamp,
  type ReplicatedClock,
} from "./replicated-clock.js";

/** A new state's clock, as the schema creates it. */
const UNSET_CLOCK: ReplicatedClock = { nowMs: 0, term: 0, monotonicMs: 0 };

const HOUR = 60 * 60 * 1000;
const T0 = 1_700_000_000_000;

function run(stamps: readonly LeaderStamp[]): ReplicatedClock[] {
  const clocks: ReplicatedClock[] = [];
  let clock = UNSET_CLOCK;
  for (const stamp of stamps) {
    clock = advanceClock(clock, stamp);
    clocks.push(clock);
  }
  return clocks;
}

describe("the replicated clock", () => {
  it("starts at the first command's wall time", () => {
    expect(advanceClock(UNSET_CLOCK, { term: 3, wallMs: T0, monotonicMs: 900 })).toEqual({
      nowMs: T0,
      term: 3,
      monotonicMs: 900,
    });
  });

  it("moves by the leader's monotonic time within a term, whatever its wall clock does", () => {
    const clocks = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 1, wallMs: T0 + 3 * HOUR, monotonicMs: 1_500 },
      { term: 1, wallMs: T0 - HOUR, monotonicMs: 4_000 },
      { term: 1, wallMs: T0 - HOUR, monotonicMs: 34_000 },
    ]);
    expect(clocks.map((c) => c.nowMs)).toEqual([T0, T0 + 500, T0 + 3_000, T0 + 33_000]);
  });

  it("counts no interval twice when a reading comes out of order", () => {
    const clocks = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 1, wallMs: T0, monotonicMs: 2_000 },
      { term: 1, wallMs: T0, monotonicMs: 1_500 },
      { term: 1, wallMs: T0, monotonicMs: 2_500 },
    ]);
    expect(clocks.map((c) => c.nowMs)).toEqual([T0, T0 + 1_000, T0 + 1_000, T0 + 1_500]);
  });

  it("moves a bounded step towards a new leader's wall clock, and never back", () => {
    const ahead = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 2, wallMs: T0 + 3 * HOUR, monotonicMs: 50 },
      { term: 2, wallMs: T0 + 3 * HOUR, monotonicMs: 1_050 },
    ]);
    expect(ahead.map((c) => c.nowMs)).toEqual([
      T0,
      T0 + LEADER_CHANGE_MAX_STEP_MS,
      T0 + LEADER_CHANGE_MAX_STEP_MS + 1_000,
    ]);
    const close = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 2, wallMs: T0 + 1_200, monotonicMs: 50 },
    ]);
    expect(close[1]!.nowMs).toBe(T0 + 1_200);
    // Behind: no step back, and no waiting for its wall clock to catch up either.
    const behind = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 2, wallMs: T0 - HOUR, monotonicMs: 50 },
      { term: 2, wallMs: T0 - HOUR + 30_000, monotonicMs: 30_050 },
    ]);
    expect(behind.map((c) => c.nowMs)).toEqual([T0, T0, T0 + 30_000]);
  });

  it("moves on at a new term to the time a majority of clocks reached, however far, and never back", () => {
    const down = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 2, wallMs: T0 + 9 * HOUR, monotonicMs: 50, quorumWallMs: T0 + 8 * HOUR },
      { term: 2, wallMs: T0 + 9 * HOUR, monotonicMs: 1_050, quorumWallMs: T0 + 9 * HOUR },
    ]);
    // Within a term, only the monotonic clock moves it.
    expect(down.map((c) => c.nowMs)).toEqual([T0, T0 + 8 * HOUR, T0 + 8 * HOUR + 1_000]);
    const behind = run([
      { term: 1, wallMs: T0, monotonicMs: 1_000 },
      { term: 2, wallMs: T0 + HOUR, monotonicMs: 50, quorumWallMs: T0 - HOUR },
    ]);
    expect(behind[1]!.nowMs).toBe(T0);
  });

  it("never runs backwards nor faster than the leaders' monotonic clocks plus one step per leader change", () => {
    const stamp = fc.record({
      newTerm: fc.boolean(),
      wallMs: fc.integer({ min: 0, max: 2 * T0 }),
      monotonicMs: fc.integer({ min: 0, max: 10 * HOUR }),
      quorumWallMs: fc.option(fc.integer({ min: 0, max: 2 * T0 }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(stamp, { minLength: 1, maxLength: 40 }), (draws) => {
        let term = 1;
        const stamps = draws.map((d) => {
          if (d.newTerm) term++;
          return {
            term,
            wallMs: d.wallMs,
            monotonicMs: d.monotonicMs,
            ...(d.quorumWallMs === undefined ? {} : { quorumWallMs: d.quorumWallMs }),
          };
        });
        const clocks = run(stamps);
        for (let i = 1; i < clocks.length; i++) {
          const before = clocks[i - 1]!;
          const after = clocks[i]!;
          const { term, monotonicMs, quorumWallMs } = stamps[i]!;
          const bound =
            term === before.term
              ? Math.max(0, monotonicMs - before.monotonicMs)
              : quorumWallMs === undefined
                ? LEADER_CHANGE_MAX_STEP_MS
                : Math.max(0, quorumWallMs - before.nowMs);
          expect(after.nowMs - before.nowMs).toBeGreaterThanOrEqual(0);
          expect(after.nowMs - before.nowMs).toBeLessThanOrEqual(bound);
        }
      }),
      { numRuns: 500 },
    );
  });
});
