/**
 * The most one leader change may move the clock forward (see advanceClock): enough to cover a failover's
 * election, little enough that a new leader whose wall clock leapt ahead takes at most this much off a
 * lease.
 */
export const LEADER_CHANGE_MAX_STEP_MS = 5_000;

/** The state machine's clock, stored with the applied index (every voter holds the same one). */
export interface ReplicatedClock {
  /** Entry time, in ms since the epoch. */
  readonly nowMs: number;
  /** The term of the last command applied; 0 before the first. */
  readonly term: number;
  /** The highest monotonic reading of that term's leader applied so far (see LeaderStamp). */
  readonly monotonicMs: number;
}

/** What the leader stamped on a command, with the term of the entry that carries it. */
export interface LeaderStamp {
  readonly term: number;
  /** The leader's wall clock, in ms since the epoch. */
  readonly wallMs: number;
  /**
   * The leader's monotonic clock, in ms from an origin of its own process. A term has one leader and a
   * restarted voter never leads a term it led before, so two readings of one term are comparable.
   */
  readonly monotonicMs: number;
  /**
   * The latest time a majority of the voters' wall clocks had reached, as the leader knew them; absent
   * when it knew of no majority (CommandEnvelope.quorumWallMs).
   */
  readonly quorumWallMs?: number;
}

/**
 * The clock after one command's stamp. Within a term it moves by the leader's monotonic elapsed time
 * only, so a leap or a step back of that leader's wall clock changes nothing. A new term's first command
 * moves it on, never back: across two processes nothing but wall clocks measure time, and one wrong
 * clock must not expire every lease at once. So it moves on to the time a majority of the voters' clocks
 * had reached (`quorumWallMs`), which no single clock ahead of the others can set, however long the gap
 * (a whole cluster down overnight); without one, towards the new leader's own wall clock by
 * LEADER_CHANGE_MAX_STEP_MS at most, the time left out making leases last longer. The very first
 * command sets the clock to its wall time. It depends on nothing but the stamp and the previous clock,
 * so every voter computes the same one.
 */
export function advanceClock(clock: ReplicatedClock, stamp: LeaderStamp): ReplicatedClock {
  if (clock.term === 0) {
    return { nowMs: stamp.wallMs, term: stamp.term, monotonicMs: stamp.monotonicMs };
  }
  if (stamp.term === clock.term) {
    // A reading below the last one (out of order) neither moves the clock nor lowers the reference, so
    // the interval is not counted twice.
    const elapsed = Math.max(0, stamp.monotonicMs - clock.monotonicMs);
    return { nowMs: clock.nowMs + elapsed, term: clock.term, monotonicMs: clock.monotonicMs + elapsed };
  }
  const step =
    stamp.quorumWallMs === undefined
      ? Math.min(Math.max(0, stamp.wallMs - clock.nowMs), LEADER_CHANGE_MAX_STEP_MS)
      : Math.max(0, stamp.quorumWallMs - clock.nowMs);
  return { nowMs: clock.nowMs + step, term: stamp.term, monotonicMs: stamp.monotonicMs };
}
