import { describe, expect, it } from "vitest";
import { raftTicks } from "./raft-ticks.js";

describe("raftTicks", () => {
  it("ticks at a divisor of both, so the election timeout is the one configured", () => {
    expect(raftTicks(1000, 100)).toEqual({ tickMs: 100, electionTicks: 10, heartbeatTicks: 1 });
    expect(raftTicks(1000, 400)).toEqual({ tickMs: 200, electionTicks: 5, heartbeatTicks: 2 });
    expect(raftTicks(1000, 30)).toEqual({ tickMs: 10, electionTicks: 100, heartbeatTicks: 3 });
    expect(raftTicks(250, 100)).toEqual({ tickMs: 50, electionTicks: 5, heartbeatTicks: 2 });
  });

  it("ticks at the heartbeat, rounding the timeout, when the divisor would wake the loop too often", () => {
    expect(raftTicks(1001, 100)).toEqual({ tickMs: 100, electionTicks: 10, heartbeatTicks: 1 });
    expect(raftTicks(10, 3)).toEqual({ tickMs: 3, electionTicks: 3, heartbeatTicks: 1 });
  });
});
