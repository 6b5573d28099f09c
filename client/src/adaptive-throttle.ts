/** Client-side adaptive throttling (Google SRE book, "Handling Overload"). */
export interface AdaptiveThrottleOptions {
  /**
   * How many requests per accepted one the client still sends: 2 lets twice the accepted rate through,
   * lower values throttle sooner. The rejection probability is max(0, (requests − k·accepts) / (requests + 1)).
   */
  readonly k: number;
  /** How far back requests and accepts count. */
  readonly windowMs: number;
  /** The window is kept as this many buckets, each `windowMs / buckets` long, and slides a bucket at a time. */
  readonly buckets: number;
}

interface Bucket {
  /** The start of the bucket's slice of time, or -Infinity while unused. */
  start: number;
  requests: number;
  accepts: number;
}

/**
 * Rejects locally once the cluster refuses a growing share of requests, so an overloaded cluster stops
 * spending work on requests it would refuse anyway. Requests and accepts are counted over a sliding
 * window; a local rejection counts as a request but never as an accept, so the rejection probability
 * falls again as soon as the cluster accepts more.
 */
export class AdaptiveThrottle {
  private readonly bucketMs: number;
  private readonly buckets: Bucket[];

  constructor(
    private readonly options: AdaptiveThrottleOptions,
    private readonly now: () => number,
    private readonly random: () => number,
  ) {
    this.bucketMs = options.windowMs / options.buckets;
    this.buckets = Array.from({ length: options.buckets }, () => ({
      start: Number.NEGATIVE_INFINITY,
      requests: 0,
      accepts: 0,
    }));
  }

  /** Whether to reject this request locally; a rejection is recorded as a request that was not accepted. */
  shouldReject(): boolean {
    const rejected = this.random() < this.rejectProbability();
    if (rejected) this.record(false);
    return rejected;
  }

  /** One answer from the cluster: accepted unless it was an overload refusal. */
  record(accepted: boolean): void {
    const bucket = this.current();
    bucket.requests++;
    if (accepted) bucket.accepts++;
  }

  rejectProbability(): number {
    const { requests, accepts } = this.totals();
    return Math.max(0, (requests - this.options.k * accepts) / (requests + 1));
  }

  private current(): Bucket {
    const slot = Math.floor(this.now() / this.bucketMs);
    const start = slot * this.bucketMs;
    const bucket = this.buckets[slot % this.buckets.length]!;
    if (bucket.start !== start) {
      bucket.start = start;
      bucket.requests = 0;
      bucket.accepts = 0;
    }
    return bucket;
  }

  private totals(): { requests: number; accepts: number } {
    const oldest = this.now() - this.options.windowMs;
    let requests = 0;
    let accepts = 0;
    for (const bucket of this.buckets) {
      if (bucket.start > oldest) {
        requests += bucket.requests;
        accepts += bucket.accepts;
      }
    }
    return { requests, accepts };
  }
}
