import { performance } from "node:perf_hooks";

/** The interval that failures from source addresses beyond `maxStrangerLogSources` share: no address. */
export const OTHER_SOURCES = "*";

interface StrangerInterval {
  /** When it ends, on the performance clock. */
  readonly until: number;
  /** The failures from its source since its line, not logged. */
  suppressed: number;
}

/**
 * Which failed handshakes of strangers get a line: the first from a source address in each interval;
 * the count of the others is reported as it ends. Its memory is bounded too: at most `maxSources`
 * addresses have an interval of their own, and failures from any other share one.
 */
export class StrangerLog {
  /** The open intervals by source, in the order they opened, so also the order they end in. */
  private readonly open = new Map<string, StrangerInterval>();
  private timer: NodeJS.Timeout | null = null;
  private timerDue = Number.POSITIVE_INFINITY;

  constructor(
    private readonly intervalMs: number,
    private readonly maxSources: number,
    private readonly report: (source: string, suppressed: number, intervalMs: number) => void,
  ) {}

  /** Whether a failure from `source` is logged; if not, it is counted for its interval's report. */
  admit(source: string): boolean {
    const now = performance.now();
    this.endIntervals(now);
    const key = this.open.has(source) || this.open.size < this.maxSources ? source : OTHER_SOURCES;
    const interval = this.open.get(key);
    if (interval === undefined) {
      this.open.set(key, { until: now + this.intervalMs, suppressed: 0 });
      return true;
    }
    interval.suppressed++;
    if (interval.until < this.timerDue) this.wakeAt(interval.until, now);
    return false;
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerDue = Number.POSITIVE_INFINITY;
    this.open.clear();
  }

  /** Reports and forgets the intervals over by `now`: the oldest, at the front. */
  private endIntervals(now: number): void {
    for (const [source, interval] of this.open) {
      if (interval.until > now) break;
      this.open.delete(source);
      if (interval.suppressed > 0) this.report(source, interval.suppressed, this.intervalMs);
    }
  }

  private wakeAt(due: number, now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    // Unreferenced: a count to report is no reason to keep the process alive.
    this.timer = setTimeout(() => this.wake(), Math.ceil(due - now) + 1).unref();
  }

  private wake(): void {
    this.timer = null;
    this.timerDue = Number.POSITIVE_INFINITY;
    const now = performance.now();
    this.endIntervals(now);
    for (const interval of this.open.values()) {
      if (interval.suppressed > 0) {
        this.wakeAt(interval.until, now);
        return;
      }
    }
  }
}
