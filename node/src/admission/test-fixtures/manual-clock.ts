import type { SchedulerClock } from "../command-scheduler-options.js";

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  cancelled: boolean;
}

/** A clock that moves only when a test advances it, firing due timers in order. */
export class ManualClock implements SchedulerClock {
  private time = 0;
  private seq = 0;
  private timers: Timer[] = [];

  now(): number {
    return this.time;
  }

  schedule(callback: () => void, delayMs: number): () => void {
    const timer: Timer = { at: this.time + delayMs, seq: this.seq++, callback, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Timers scheduled and neither fired nor cancelled. */
  get pendingTimers(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.timers.splice(this.timers.indexOf(due), 1);
      this.time = due.at;
      due.callback();
    }
    this.time = until;
  }
}
