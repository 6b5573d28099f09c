/** Exponential backoff: the ceiling doubles (by `multiplier`) per retry, from `initialMs` up to `maxMs`. */
export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly multiplier: number;
}

/**
 * How long to wait before retry number `retry` (1 for the first retry): a uniformly random time below the
 * exponential ceiling ("full jitter"), so clients that failed together do not come back together.
 */
export function backoffDelay(retry: number, options: BackoffOptions, random: () => number): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * options.multiplier ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}
