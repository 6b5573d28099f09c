import { describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { encodeCommand, SimStateMachine } from "./sim-state-machine.js";

function command(index: number, term: number, id: number): Entry {
  return { index, term, type: "normal", data: encodeCommand(id, id % 7, id * 1000, id % 5) };
}

describe("SimStateMachine", () => {
  it("round-trips through a snapshot and keeps the same digest chain", () => {
    const sm = SimStateMachine.empty();
    for (let i = 1; i <= 10; i++) sm.apply(command(i, 1 + (i >> 2), i));
    const data = sm.serialize();
    const restored = SimStateMachine.restore({ index: 10, term: sm.term, conf: { voters: [] } }, data);
    expect(restored.applied).toBe(10);
    expect(restored.digest).toBe(sm.digest);
    expect(restored.serialize()).toEqual(data);
    sm.apply(command(11, 4, 11));
    restored.apply(command(11, 4, 11));
    expect(restored.digest).toBe(sm.digest);
  });

  it("spans several 64-byte chunks", () => {
    expect(SimStateMachine.empty().serialize().byteLength).toBeGreaterThan(128);
  });

  it("the digest depends on every applied entry", () => {
    const a = SimStateMachine.empty();
    const b = SimStateMachine.empty();
    a.apply(command(1, 1, 1));
    b.apply(command(1, 1, 2));
    expect(a.digest).not.toBe(b.digest);
  });

  it("refuses a snapshot whose data was taken elsewhere", () => {
    const sm = SimStateMachine.empty();
    sm.apply(command(1, 1, 1));
    const data = sm.serialize();
    expect(() => SimStateMachine.restore({ index: 2, term: 1, conf: { voters: [] } }, data)).toThrow();
    expect(() =>
      SimStateMachine.restore({ index: 1, term: 1, conf: { voters: [] } }, data.subarray(1)),
    ).toThrow();
  });
});
