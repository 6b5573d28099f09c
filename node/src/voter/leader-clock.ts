/** The clocks a leader stamps each command with (see CommandEnvelope), passed in so tests set them. */
export interface LeaderClock {
  /** Wall-clock time, in ms since the epoch. */
  wallMs(): number;
  /** A monotonic reading, in whole ms from an origin of this process. */
  monotonicMs(): number;
}

export const SYSTEM_LEADER_CLOCK: LeaderClock = {
  wallMs: () => Date.now(),
  monotonicMs: () => Math.floor(performance.now()),
};
