/** The pause after a first failed snapshot; each further failure doubles it. */
export const SNAPSHOT_RETRY_INITIAL_MS = 1_000;
/** The longest pause between two attempts. */
export const SNAPSHOT_RETRY_MAX_MS = 60_000;

/**
 * When a voter may try a local snapshot again after failures: each attempt copies the whole state, so
 * a failure that persists (a full disk) must not be retried after every Ready. The pause doubles with
 * each failure in a row, up to a cap, and a success clears it. The log keeps growing meanwhile, which
 * costs disk but loses nothing.
 */
export class SnapshotBackoff {
  /** Failures since the last success. */
  failures = 0;
  private retryAt = 0;

  constructor(
    private readonly initialMs = SNAPSHOT_RETRY_INITIAL_MS,
    private readonly maxMs = SNAPSHOT_RETRY_MAX_MS,
  ) {}

  /** Whether an attempt may start at `now` (milliseconds). */
  allows(now: number): boolean {
    return now >= this.retryAt;
  }

  /** Records a failure at `now`; returns the pause before the next attempt. */
  failed(now: number): number {
    this.failures++;
    const pause = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.failures - 1, 30));
    this.retryAt = now + pause;
    return pause;
  }

  succeeded(): void {
    this.failures = 0;
    this.retryAt = 0;
  }
}
