/**
 * A `Retry-After` header in milliseconds: delay-seconds or an HTTP-date (RFC 9110 section 10.2.3);
 * undefined when absent or unreadable. A date in the past is zero. Delay-seconds past
 * Number.MAX_SAFE_INTEGER ms are that: Infinity would make the jittered wait NaN, which passes every
 * deadline check and fires at once.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER);
  // Date.parse also takes bare numbers such as "-1" (a year); an HTTP-date always names a day or month.
  const date = /[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * How long to wait after a refusal that asked for `retryAfterMs`: that long, and up to as long again at
 * random. Callers refused in the same instant are told the same Retry-After (whole seconds); waiting it
 * out exactly brings them back in the same instant, where the admission window that refused them
 * refuses most of them again. Spread over a second Retry-After, they come back a few at a time.
 */
export function retryAfterDelay(retryAfterMs: number, random: () => number): number {
  return retryAfterMs + Math.floor(random() * retryAfterMs);
}
