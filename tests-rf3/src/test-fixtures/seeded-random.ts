/**
 * A seeded pseudo-random sequence (mulberry32): the same seed makes the same fault schedule and the
 * same workload choices on every run, so a failure names a schedule that can be run again.
 */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
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
