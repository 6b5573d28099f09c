import { describe, expect, it } from "vitest";
import { logRowOf } from "./dashboard-log-rows.js";

describe("logRowOf", () => {
  it("takes a pino line apart: its own columns, and every other field as text", () => {
    const line = JSON.stringify({
      level: 40,
      time: 1_764_000_000_123,
      pid: 42,
      hostname: "h",
      nodeId: "voter2",
      component: "raft",
      msg: "raft role changed",
      term: 3,
      leader: "voter1",
      err: { type: "Error", message: "boom", stack: "Error: boom\n at x" },
      detail: { a: [1, 2] },
    });
    expect(logRowOf(5, "voter2", line)).toEqual({
      seq: 5,
      voter: "voter2",
      time: 1_764_000_000_123,
      level: 40,
      component: "raft",
      msg: "raft role changed",
      fields: { term: "3", leader: "voter1", err: "Error: boom", detail: '{"a":[1,2]}' },
    });
  });

  it("keeps a line that is not a pino object as its message", () => {
    for (const line of ["plain text from a crashing voter", "[1,2]", "42"]) {
      expect(logRowOf(0, "voter1", line)).toEqual({
        seq: 0,
        voter: "voter1",
        time: null,
        level: null,
        component: null,
        msg: line,
        fields: {},
      });
    }
  });
});
