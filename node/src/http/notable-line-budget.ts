import { performance } from "node:perf_hooks";

/** `KeyLoad:Log:NotableRequestLinesPerSecond`'s default, as zap's production sampling keeps 100. */
export const DEFAULT_NOTABLE_LINES_PER_SECOND = 100;

const WINDOW_MS = 1_000;

/**
 * How many requests worth a look (request-observer.ts) get their line at info each second. Under
 * overload they come by the thousand (an election's 503s under a flood, a flood's clients giving up),
 * and a line each is work a voter can least spare then: past the budget a line goes at debug, and the
 * next line at info says how many did (`take` then returns their count).
 */
export class NotableLineBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;
  private skipped = 0;

  constructor(
    private readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * One line at info if this second's budget has room: the number of lines moved to debug since the
   * last one at info (0 or more), or null when the budget is spent and this one moves to debug too.
   */
  take(): number | null {
    const t = this.now();
    if (t - this.windowStart >= WINDOW_MS) {
      this.windowStart = t;
      this.used = 0;
    }
    if (this.used >= this.perSecond) {
      this.skipped++;
      return null;
    }
    this.used++;
    const skipped = this.skipped;
    this.skipped = 0;
    return skipped;
  }
}
