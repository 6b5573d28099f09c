/**
 * The longest delay one Node timer takes: past it setTimeout warns (TimeoutOverflowWarning) and fires
 * after 1 ms, which would end a long deadline, or a long Retry-After, at once.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface LongTimeoutOptions {
  /** The wait does not hold the process open. */
  readonly unref?: boolean;
  /** The longest step the wait is armed in; MAX_TIMER_MS but in tests. */
  readonly stepMs?: number;
}

/** A pending setLongTimeout. */
export interface LongTimeout {
  clear(): void;
}

/**
 * Calls `callback` once `delayMs` has passed, however long that is (Infinity: never), arming one timer
 * after another of at most `stepMs` each.
 */
export function setLongTimeout(
  callback: () => void,
  delayMs: number,
  options: LongTimeoutOptions = {},
): LongTimeout {
  const stepMs = options.stepMs ?? MAX_TIMER_MS;
  let leftMs = delayMs;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const step = Math.min(leftMs, stepMs);
    leftMs -= step;
    // Node arms anything below 1 ms (NaN too) as 1 ms.
    timer = setTimeout(leftMs > 0 ? arm : callback, step);
    if (options.unref === true) timer.unref();
  };
  arm();
  return { clear: () => clearTimeout(timer) };
}
