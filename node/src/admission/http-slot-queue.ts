import { FifoQueue } from "./fifo-queue.js";

/** One request waiting for room in a pool: the modeled bytes it would reserve, and how it takes room. */
export interface SlotWaiter {
  readonly bytes: number;
  /** Called once, by `admitHead`, to reserve the room it waited for. */
  readonly admit: () => void;
  settled: boolean;
}

/**
 * The requests of one HTTP pool that found it full, in arrival order. The pool gives room that frees to
 * the oldest first, so a request that waits is not overtaken by one arriving later; a waiter that stops
 * waiting (its wait ran out, its connection closed) is only marked and skipped when it reaches the head,
 * as the queue has no removal from its middle.
 */
export class HttpSlotQueue {
  private readonly waiters = new FifoQueue<SlotWaiter>();
  private count = 0;

  /** Requests still waiting. */
  get length(): number {
    return this.count;
  }

  add(waiter: SlotWaiter): void {
    this.waiters.push(waiter);
    this.count++;
  }

  /** Stops `waiter`'s wait without room; false when it had settled already. */
  withdraw(waiter: SlotWaiter): boolean {
    if (waiter.settled) return false;
    waiter.settled = true;
    this.count--;
    return true;
  }

  /** The oldest request still waiting. */
  head(): SlotWaiter | undefined {
    let head = this.waiters.peek();
    while (head?.settled) {
      this.waiters.shift();
      head = this.waiters.peek();
    }
    return head;
  }

  /** Settles the head (which `head()` returned) as given room. */
  admitHead(): void {
    const head = this.waiters.shift();
    if (head === undefined || head.settled) return;
    head.settled = true;
    this.count--;
    head.admit();
  }
}
