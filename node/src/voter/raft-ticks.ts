/** The shortest tick the driver runs the Raft core's clock at: each tick wakes the event loop. */
const MIN_TICK_MS = 5;

/** The Raft core's clock for a voter: how often it ticks, and its timeouts counted in ticks. */
export interface RaftTicks {
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
}

/**
 * Ticks that divide both the election timeout and the heartbeat interval, so that elections wait a
 * random time in [T, 2T) of the timeout configured (contract section 5) and heartbeats go at their
 * interval. Settings whose common divisor is below MIN_TICK_MS tick at the heartbeat instead, the
 * timeout rounded to whole heartbeats.
 */
export function raftTicks(electionTimeoutMs: number, heartbeatIntervalMs: number): RaftTicks {
  const tickMs = gcd(electionTimeoutMs, heartbeatIntervalMs);
  if (tickMs < MIN_TICK_MS) {
    return {
      tickMs: heartbeatIntervalMs,
      electionTicks: Math.max(2, Math.round(electionTimeoutMs / heartbeatIntervalMs)),
      heartbeatTicks: 1,
    };
  }
  return {
    tickMs,
    electionTicks: electionTimeoutMs / tickMs,
    heartbeatTicks: heartbeatIntervalMs / tickMs,
  };
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
