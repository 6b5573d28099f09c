/** How a pool's Retry-After follows its refusals (RetryAfterAdvice); the defaults are HTTP admission's. */
export interface RetryAfterAdviceOptions {
  /** What a refusal advises while refusals are few, in whole seconds as HTTP's Retry-After. */
  readonly minSeconds: number;
  /** The most it advises, however many are refused. */
  readonly maxSeconds: number;
  /** The window over which admissions and refusals are counted. */
  readonly windowMs: number;
  /** Refusals per admission in a window above which the advice doubles; at most half of it, it shrinks. */
  readonly refusalShare: number;
}

export const RETRY_AFTER_ADVICE_DEFAULTS: RetryAfterAdviceOptions = {
  minSeconds: 1,
  maxSeconds: 8,
  windowMs: 1_000,
  refusalShare: 0.1,
};

/**
 * The Retry-After a pool's refusals advise. A refused caller that honours it comes back once, so the
 * callers a full pool keeps refusing come back at a rate of their number over the advice: with a second,
 * a flood of waiting callers cost the voter more refusals than it admitted requests
 * (docs/decisions/0024-retry-after-follows-refusals.md). So while a window's refusals exceed
 * `refusalShare` of its admissions the advice doubles, up to `maxSeconds`; while they stay at most
 * half of that (an idle window too) it shrinks by a second per window. Callers holding slots are not
 * refused and never see it.
 */
export class RetryAfterAdvice {
  private seconds: number;
  private windowStart: number;
  private admissions = 0;
  private refusals = 0;

  constructor(
    private readonly options: RetryAfterAdviceOptions,
    private readonly now: () => number,
  ) {
    this.seconds = options.minSeconds;
    this.windowStart = now();
  }

  admitted(): void {
    this.roll();
    this.admissions++;
  }

  /** Counts a refusal and returns the seconds it advises. */
  refused(): number {
    this.roll();
    this.refusals++;
    return this.seconds;
  }

  /** The advice now, without counting anything. */
  current(): number {
    this.roll();
    return this.seconds;
  }

  private roll(): void {
    const { windowMs, refusalShare, minSeconds, maxSeconds } = this.options;
    const elapsed = this.now() - this.windowStart;
    if (elapsed < windowMs) return;
    const windows = Math.floor(elapsed / windowMs);
    this.windowStart += windows * windowMs;
    if (this.refusals > refusalShare * this.admissions) {
      this.seconds = Math.min(maxSeconds, this.seconds * 2);
      // The windows after it passed without a request: each counts as quiet.
      this.seconds = Math.max(minSeconds, this.seconds - (windows - 1));
    } else if (this.refusals <= (refusalShare / 2) * this.admissions) {
      this.seconds = Math.max(minSeconds, this.seconds - windows);
    } else {
      this.seconds = Math.max(minSeconds, this.seconds - (windows - 1));
    }
    this.admissions = 0;
    this.refusals = 0;
  }
}
