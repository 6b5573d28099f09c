import { describe, expect, it } from "vitest";
import { InvariantViolation } from "./invariants.js";
import { coreFailure, describeError, fail, SimulationFailure } from "./sim-failure.js";

describe("sim failures", () => {
  it("fail throws the named invariant's violation", () => {
    expect(() => fail("log-matching", "n1 diverges")).toThrow(InvariantViolation);
    try {
      fail("log-matching", "n1 diverges");
    } catch (error) {
      expect(error).toMatchObject({ invariant: "log-matching", detail: "n1 diverges" });
    }
  });

  it("a core's own invariant violation passes through unchanged", () => {
    const own = new InvariantViolation("election-safety", "two leaders");
    expect(coreFailure("n2", "tick", own)).toBe(own);
  });

  it("anything else a core throws is a broken core contract, naming the node, the call and the error", () => {
    const failure = coreFailure("n3", "step(vote)", new RangeError("index 9 out of range"));
    expect(failure.invariant).toBe("core-contract");
    expect(failure.detail).toBe("n3.step(vote) threw RangeError: index 9 out of range");
    expect(coreFailure("n1", "ready", "a string").detail).toBe("n1.ready threw a string");
  });

  it("describes errors by name and message, other values as strings", () => {
    expect(describeError(new TypeError("bad"))).toBe("TypeError: bad");
    expect(describeError(42)).toBe("42");
  });

  it("a simulation failure says where to replay it and carries the trace", () => {
    const f = new SimulationFailure(17, "linearizable-read", "stale read", 420, 9000, "line 1\nline 2");
    expect(f.name).toBe("SimulationFailure");
    expect(f.message).toBe(
      "seed 17: linearizable-read violated at step 420 (t=9000): stale read\nline 1\nline 2",
    );
    expect(f).toMatchObject({ seed: 17, invariant: "linearizable-read", step: 420, time: 9000 });
  });
});
