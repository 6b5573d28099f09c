import { type DriverTimers, NODE_TIMERS, type TimerHandle } from "./driver-timers.js";

/** Someone waiting for the state machine to apply `index`, given up on when `timer` fires. */
export interface IndexWaiter {
  readonly index: number;
  readonly resolve: () => void;
  readonly timer: TimerHandle;
}

/** Resolves the waiters whose index the state machine has applied; returns the others. */
export function settleApplied<W extends IndexWaiter>(
  waiters: W[],
  applied: number,
  timers: DriverTimers = NODE_TIMERS,
): W[] {
  if (waiters.length === 0) return waiters;
  const waiting: W[] = [];
  for (const w of waiters) {
    if (w.index <= applied) {
      timers.clearTimeout(w.timer);
      w.resolve();
    } else {
      waiting.push(w);
    }
  }
  return waiting;
}

/**
 * Answers to forwarded commands waiting for this voter to apply the command's entry, so that the
 * client's next request here sees it. Each is answered after a bounded wait whatever happens: the
 * command's outcome is known, only its local apply may be late. Never rejected.
 */
export class ApplyWaiters {
  private waiters: IndexWaiter[] = [];

  constructor(private readonly timers: DriverTimers = NODE_TIMERS) {}

  /** Resolves once `settle` reaches `index`, or after `timeoutMs`, whichever comes first. */
  wait(index: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = this.timers.setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.timer !== timer);
        resolve();
      }, timeoutMs);
      this.waiters.push({ index, resolve, timer });
    });
  }

  isEmpty(): boolean {
    return this.waiters.length === 0;
  }

  /** Whether one of them waits for an index beyond `applied`. */
  waitsBeyond(applied: number): boolean {
    return this.waiters.some((w) => w.index > applied);
  }

  /** Answers those whose index is applied. */
  settle(applied: number): void {
    this.waiters = settleApplied(this.waiters, applied, this.timers);
  }

  /** Answers every one still waiting: their outcome is known. */
  releaseAll(): void {
    this.settle(Number.POSITIVE_INFINITY);
  }
}
