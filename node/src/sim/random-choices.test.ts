import { describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/index.js";
import { between, pick, weighted } from "./random-choices.js";

/** Runs `choose` many times on one stream and counts each outcome. */
function tally<T>(choose: (random: SeededRandom) => T, times = 4000): Map<T, number> {
  const random = new SeededRandom(5);
  const counts = new Map<T, number>();
  for (let i = 0; i < times; i++) {
    const x = choose(random);
    counts.set(x, (counts.get(x) ?? 0) + 1);
  }
  return counts;
}

/** Whether `choose` took exactly one draw: the stream then goes on as a fresh one does after one. */
function takesOneDraw(choose: (random: SeededRandom) => unknown): boolean {
  const used = new SeededRandom(9);
  choose(used);
  const fresh = new SeededRandom(9);
  fresh.nextUint32();
  return used.nextUint32() === fresh.nextUint32();
}

describe("random choices", () => {
  it("between covers the inclusive range and nothing outside it", () => {
    const counts = tally((r) => between(r, [3, 6]));
    expect([...counts.keys()].sort()).toEqual([3, 4, 5, 6]);
    expect(tally((r) => between(r, [7, 7])).get(7)).toBe(4000);
  });

  it("pick chooses every item, uniformly", () => {
    const counts = tally((r) => pick(r, ["a", "b", "c", "d"]));
    expect([...counts.keys()].sort()).toEqual(["a", "b", "c", "d"]);
    for (const n of counts.values()) expect(n).toBeGreaterThan(850);
  });

  it("weighted chooses in proportion to the weights and never a zero weight", () => {
    const counts = tally((r) => weighted(r, [1, 0, 3]));
    expect(counts.get(1)).toBeUndefined();
    const ratio = counts.get(2)! / counts.get(0)!;
    expect(ratio).toBeGreaterThan(2.5);
    expect(ratio).toBeLessThan(3.5);
    expect(tally((r) => weighted(r, [0, 0, 2])).get(2)).toBe(4000);
  });

  it("a draw of exactly zero still skips leading zero weights", () => {
    const zero = { nextFloat: () => 0 } as SeededRandom;
    expect(weighted(zero, [0, 0, 1, 1])).toBe(2);
  });

  it("each choice takes exactly one draw, so replays stay aligned", () => {
    expect(takesOneDraw((r) => between(r, [0, 10]))).toBe(true);
    expect(takesOneDraw((r) => pick(r, [1, 2, 3]))).toBe(true);
    expect(takesOneDraw((r) => weighted(r, [1, 2, 3]))).toBe(true);
  });

  it("the same stream makes the same choices", () => {
    const run = (): number[] => {
      const random = new SeededRandom(42);
      return Array.from({ length: 20 }, () => weighted(random, [2, 1, 1]) + between(random, [0, 5]) * 10);
    };
    expect(run()).toEqual(run());
  });
});
