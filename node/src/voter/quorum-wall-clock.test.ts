import { describe, expect, it } from "vitest";
import { quorumWallMs } from "./quorum-wall-clock.js";

const VOTERS = ["a", "b", "c"];
const T0 = 1_700_000_000_000;
const HOUR = 60 * 60 * 1000;

function known(readings: Record<string, number>): (voter: string) => number | null {
  return (voter) => readings[voter] ?? null;
}

describe("quorumWallMs", () => {
  it("is the latest time a majority of the clocks reached", () => {
    expect(quorumWallMs("a", T0, VOTERS, known({ b: T0 - 10, c: T0 + 20 }))).toBe(T0);
    expect(quorumWallMs("a", T0, VOTERS, known({ b: T0 - 10 }))).toBe(T0 - 10);
    expect(quorumWallMs("a", T0, ["a", "b", "c", "d", "e"], known({ b: T0 + 1, c: T0 + 2, d: T0 - 5 }))).toBe(
      T0,
    );
  });

  it("is set by no clock ahead of the others, the voter's own or a peer's", () => {
    expect(quorumWallMs("a", T0 + 5 * HOUR, VOTERS, known({ b: T0, c: T0 + 3 }))).toBe(T0 + 3);
    expect(quorumWallMs("a", T0, VOTERS, known({ b: T0 + 5 * HOUR }))).toBe(T0);
  });

  it("is unknown without a majority's readings", () => {
    expect(quorumWallMs("a", T0, VOTERS, known({}))).toBeUndefined();
    expect(quorumWallMs("a", T0, ["a", "b"], known({}))).toBeUndefined();
    expect(quorumWallMs("a", T0, ["a"], known({}))).toBe(T0);
  });

  it("counts only the configuration's voters", () => {
    expect(quorumWallMs("a", T0, VOTERS, known({ x: T0, y: T0 }))).toBeUndefined();
  });
});
