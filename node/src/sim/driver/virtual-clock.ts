import type { DriverTimers, TimerHandle } from "../../voter/driver-timers.js";
import { EventQueue } from "../event-queue.js";

/** One process life's timers: all of them die with it (a crash), and none fire while it is paused. */
export class TimerOwner {
  alive = true;
  /** Paused until this time (0 when running): what falls due meanwhile fires when it resumes. */
  pausedUntil = 0;

  constructor(
    readonly name: string,
    /** How much slower (above 1) or faster this process's clock runs than the simulation's. */
    readonly skew: number,
  ) {}
}

interface Timer extends TimerHandle {
  readonly owner: TimerOwner;
  readonly callback: () => void;
  /** For an interval, its period in simulated time; 0 for a one-shot timer. */
  readonly period: number;
  cancelled: boolean;
}

/**
 * The simulation's time and every process's timers, in one queue: the next timer to fire is the next
 * thing any simulated process does on its own. Ties fire in the order they were set, as Node fires
 * immediates and same-time timeouts, so a seed replays the same interleaving.
 */
export class VirtualClock {
  private readonly queue = new EventQueue<Timer>();
  private time = 0;

  get now(): number {
    return this.time;
  }

  /** The time of the next timer due, `Infinity` when none is. */
  peekTime(): number {
    return this.queue.peekTime();
  }

  /** Advances to the next timer and fires it; false when it was cancelled or its owner is gone. */
  fireNext(): boolean {
    const item = this.queue.pop();
    if (item === undefined) return false;
    const timer = item.value;
    this.time = Math.max(this.time, item.time);
    if (timer.cancelled || !timer.owner.alive) return false;
    if (timer.owner.pausedUntil > this.time) {
      this.queue.push(timer.owner.pausedUntil, timer);
      return false;
    }
    if (timer.period > 0) this.queue.push(this.time + timer.period, timer);
    else timer.cancelled = true;
    timer.callback();
    return true;
  }

  /** Moves time on to `at` for an event outside the timers (a delivery). */
  advanceTo(at: number): void {
    this.time = Math.max(this.time, at);
  }

  /** Schedules the simulation's own work (faults, clients) at `at`; it has no owner to die with. */
  at(at: number, owner: TimerOwner, callback: () => void): void {
    this.queue.push(at, { owner, callback, period: 0, cancelled: false });
  }

  /** The DriverTimers of one process life. */
  timersFor(owner: TimerOwner): DriverTimers {
    const delay = (ms: number): number => Math.max(0, Math.round(ms * owner.skew));
    const set = (callback: () => void, at: number, period: number): Timer => {
      const timer: Timer = { owner, callback, period, cancelled: false };
      this.queue.push(at, timer);
      return timer;
    };
    const cancel = (handle: TimerHandle | undefined): void => {
      if (handle !== undefined) (handle as Timer).cancelled = true;
    };
    return {
      now: () => Math.round(this.time / owner.skew),
      setTimeout: (callback, ms) => set(callback, this.time + delay(ms), 0),
      clearTimeout: cancel,
      setInterval: (callback, ms) => set(callback, this.time + delay(ms), Math.max(1, delay(ms))),
      clearInterval: cancel,
      setImmediate: (callback) => {
        set(callback, this.time, 0);
      },
    };
  }
}
