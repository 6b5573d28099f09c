/**
 * How many retries a client may spend: `ratio` of its requests, plus a floor of `refillPerSecond` that
 * lets a quiet client still retry, held in a bucket of at most `capacity` tokens.
 */
export interface RetryBudgetOptions {
  readonly ratio: number;
  readonly capacity: number;
  readonly refillPerSecond: number;
}

/**
 * A token bucket over retries. Each first attempt deposits `ratio` of a token, time deposits
 * `refillPerSecond`, each retry withdraws a whole one. While a cluster is down every call would
 * otherwise multiply its load by the attempt count just when it can least take it; with the budget,
 * retries stay near `ratio` × requests once the bucket has drained.
 */
export class RetryBudget {
  private tokens: number;
  private updatedAt: number;

  constructor(
    private readonly options: RetryBudgetOptions,
    private readonly now: () => number,
  ) {
    this.tokens = options.capacity;
    this.updatedAt = now();
  }

  /** A call's first attempt. */
  recordRequest(): void {
    this.refill();
    this.tokens = Math.min(this.options.capacity, this.tokens + this.options.ratio);
  }

  /** Takes one retry's token; false when the budget is spent (the caller then gives up). */
  tryRetry(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Gives back the token of a retry that tryRetry granted but that was never sent (its wait was cut
   * short): a call the caller abandoned has not loaded the cluster, so it must not drain the budget.
   */
  refundRetry(): void {
    this.refill();
    this.tokens = Math.min(this.options.capacity, this.tokens + 1);
  }

  /** Tokens available now, for tests and diagnostics. */
  available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const now = this.now();
    const elapsedMs = Math.max(0, now - this.updatedAt);
    this.updatedAt = now;
    this.tokens = Math.min(
      this.options.capacity,
      this.tokens + (elapsedMs / 1000) * this.options.refillPerSecond,
    );
  }
}
