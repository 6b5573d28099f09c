import { describe, expect, it } from "vitest";
import { applyConfChange, confChangeProblem, decodeConfChange, encodeConfChange } from "./conf-change.js";
import { RaftInvariantError } from "./errors.js";

const THREE = { voters: ["a", "b", "c"], learners: [] };

describe("membership changes as values", () => {
  it("adds a learner, promotes it and removes members, refusing what does not apply", () => {
    const withD = applyConfChange(THREE, { type: "add-learner", node: "d" });
    expect(withD).toEqual({ voters: ["a", "b", "c"], learners: ["d"] });
    expect(applyConfChange(withD, { type: "promote", node: "d" })).toEqual({
      voters: ["a", "b", "c", "d"],
      learners: [],
    });
    expect(applyConfChange(withD, { type: "remove", node: "d" })).toEqual(THREE);
    expect(confChangeProblem(THREE, { type: "add-learner", node: "a" })).toMatch(/already a member/);
    expect(confChangeProblem(withD, { type: "add-learner", node: "d" })).toMatch(/already a member/);
    expect(confChangeProblem(THREE, { type: "promote", node: "a" })).toMatch(/not a learner/);
    expect(confChangeProblem(THREE, { type: "remove", node: "z" })).toMatch(/not a member/);
    expect(confChangeProblem({ voters: ["a"] }, { type: "remove", node: "a" })).toMatch(/last voter/);
    // A change that cannot apply leaves the configuration as it is, on every node alike.
    expect(applyConfChange(THREE, { type: "promote", node: "a" })).toBe(THREE);
  });

  it("bootstraps only an empty configuration, with distinct voters", () => {
    expect(applyConfChange({ voters: [] }, { type: "bootstrap", voters: ["b", "a"] })).toEqual({
      voters: ["b", "a"],
      learners: [],
    });
    expect(confChangeProblem(THREE, { type: "bootstrap", voters: ["x"] })).toMatch(/already bootstrapped/);
    expect(confChangeProblem({ voters: [] }, { type: "bootstrap", voters: ["a", "a"] })).toMatch(/distinct/);
    expect(confChangeProblem({ voters: [] }, { type: "bootstrap", voters: [] })).toMatch(/distinct/);
  });

  it("round-trips every kind through a conf entry's bytes and refuses anything else", () => {
    for (const change of [
      { type: "add-learner", node: "d" },
      { type: "promote", node: "d" },
      { type: "remove", node: "a" },
      { type: "bootstrap", voters: ["a", "b"] },
    ] as const) {
      expect(decodeConfChange(encodeConfChange(change))).toEqual(change);
    }
    const bytes = (text: string) => new TextEncoder().encode(text);
    for (const bad of ["", "{", "null", '{"type":"add-voter","node":"d"}', '{"type":"remove","node":""}']) {
      expect(() => decodeConfChange(bytes(bad))).toThrow(RaftInvariantError);
    }
  });
});
