/**
 * Moves every seed of a run by this much: `pnpm soak` sets a new one each round, so its rounds try
 * other fault schedules and workload choices, and names it so that a failing round can be run again.
 */
const SEED_OFFSET_VARIABLE = "KEYLOAD_FAULT_SEED";

function seedOffset(): number {
  const text = process.env[SEED_OFFSET_VARIABLE];
  if (text === undefined || text === "") return 0;
  const offset = Number(text);
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new RangeError(
      `${SEED_OFFSET_VARIABLE} must be a non-negative integer, not ${JSON.stringify(text)}`,
    );
  }
  return offset;
}

/**
 * A seeded pseudo-random sequence (mulberry32): the same seed makes the same fault schedule and the
 * same workload choices on every run, so a failure names a schedule that can be run again. Every seed
 * is moved by `KEYLOAD_FAULT_SEED` when it is set (0 otherwise).
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    // The golden-ratio step spreads neighbouring offsets over the whole 32-bit state.
    this.state = (seed + Math.imul(seedOffset(), 0x9e3779b9)) >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let z = this.state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return ((z ^ (z >>> 14)) >>> 0) / 0x1_0000_0000;
  }

  /** An integer in [0, bound). */
  nextInt(bound: number): number {
    if (!Number.isInteger(bound) || bound <= 0) {
      throw new RangeError(`bound must be a positive integer, not ${bound}`);
    }
    return Math.floor(this.next() * bound);
  }
}
