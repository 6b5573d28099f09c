/** A pending timer, to cancel it with; opaque. */
export type TimerHandle = object;

/**
 * The clock and timers a RaftDriver and its waiters run on: Node's in a voter, the simulator's virtual
 * ones when the simulator runs the driver itself, so that a seed replays the driver's every turn.
 */
export interface DriverTimers {
  /** Milliseconds on a wall clock, for backoffs and bounded waits. */
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
  setInterval(callback: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle | undefined): void;
  /** Runs `callback` in a later turn, after the I/O that turn brings in. */
  setImmediate(callback: () => void): void;
}

/** Node's own timers. */
export const NODE_TIMERS: DriverTimers = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
  setInterval: (callback, ms) => setInterval(callback, ms),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout | undefined),
  setImmediate: (callback) => {
    setImmediate(callback);
  },
};
