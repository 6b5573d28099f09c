import { describe, expect, it } from "vitest";
import { SeededRandom } from "./seeded-random.js";

const draw = (r: SeededRandom, n: number, f: (r: SeededRandom) => number): number[] =>
  Array.from({ length: n }, () => f(r));

describe("SeededRandom", () => {
  it("yields the same sequence for the same seed", () => {
    const a = draw(new SeededRandom(42), 100, (r) => r.nextUint32());
    const b = draw(new SeededRandom(42), 100, (r) => r.nextUint32());
    expect(a).toEqual(b);
  });

  it("yields different sequences for different seeds", () => {
    const a = draw(new SeededRandom(1), 20, (r) => r.nextUint32());
    const b = draw(new SeededRandom(2), 20, (r) => r.nextUint32());
    expect(a).not.toEqual(b);
    // Not merely shifted copies of each other either.
    expect(a.filter((x) => b.includes(x)).length).toBeLessThan(3);
  });

  it("is a pure function of the seed taken as an unsigned 32-bit integer", () => {
    const a = draw(new SeededRandom(7), 10, (r) => r.nextUint32());
    const b = draw(new SeededRandom(7 + 2 ** 32), 10, (r) => r.nextUint32());
    expect(b).toEqual(a);
  });

  it("matches an independent SplitMix32-seeded xoshiro128** reference", () => {
    // Reference written with BigInt arithmetic, independent of the implementation's Math.imul tricks.
    const M = (1n << 32n) - 1n;
    const mul = (a: bigint, b: bigint): bigint => (a * b) & M;
    const rotl = (x: bigint, k: bigint): bigint => ((x << k) | (x >> (32n - k))) & M;
    const reference = (seed: number, n: number): number[] => {
      let s = BigInt(seed >>> 0);
      const split = (): bigint => {
        s = (s + 0x9e3779b9n) & M;
        let z = s;
        z = mul(z ^ (z >> 16n), 0x85ebca6bn);
        z = mul(z ^ (z >> 13n), 0xc2b2ae35n);
        return (z ^ (z >> 16n)) & M;
      };
      let a = split();
      let b = split();
      let c = split();
      let d = split() | 1n;
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        out.push(Number(mul(rotl(mul(b, 5n), 7n), 9n)));
        const t = (b << 9n) & M;
        c ^= a;
        d ^= b;
        b ^= c;
        a ^= d;
        c ^= t;
        d = rotl(d, 11n);
      }
      return out;
    };
    for (const seed of [0, 1, 42, 0xdeadbeef, 2 ** 31]) {
      expect(draw(new SeededRandom(seed), 50, (r) => r.nextUint32())).toEqual(reference(seed, 50));
    }
  });

  it("nextInt stays within [0, bound) and covers it roughly uniformly", () => {
    const r = new SeededRandom(123);
    const counts = new Array(10).fill(0);
    let outside = 0;
    for (let i = 0; i < 20_000; i++) {
      const v = r.nextInt(10);
      if (!Number.isInteger(v) || v < 0 || v >= 10) outside++;
      else counts[v]++;
    }
    expect(outside).toBe(0);
    for (const c of counts) {
      expect(c).toBeGreaterThan(1700);
      expect(c).toBeLessThan(2300);
    }
  });

  it("nextInt(1) is always 0", () => {
    const r = new SeededRandom(5);
    expect(draw(r, 50, (x) => x.nextInt(1))).toEqual(new Array(50).fill(0));
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("nextInt rejects bound %s", (bound) => {
    expect(() => new SeededRandom(1).nextInt(bound)).toThrow(RangeError);
  });

  it("nextFloat lies in [0, 1) and chance honours its extremes", () => {
    const r = new SeededRandom(9);
    let sum = 0;
    let outside = 0;
    for (let i = 0; i < 5000; i++) {
      const f = r.nextFloat();
      if (!(f >= 0 && f < 1)) outside++;
      sum += f;
    }
    expect(outside).toBe(0);
    expect(sum / 5000).toBeGreaterThan(0.45);
    expect(sum / 5000).toBeLessThan(0.55);
    const extremes = Array.from({ length: 200 }, () => [r.chance(0), r.chance(1)]);
    expect(extremes.every(([never, always]) => never === false && always === true)).toBe(true);
    let hits = 0;
    for (let i = 0; i < 10_000; i++) if (r.chance(0.25)) hits++;
    expect(hits).toBeGreaterThan(2200);
    expect(hits).toBeLessThan(2800);
  });

  it("interleaving calls of different kinds stays deterministic", () => {
    const run = (): number[] => {
      const r = new SeededRandom(77);
      return [r.nextInt(7), r.nextFloat(), r.nextUint32(), r.chance(0.5) ? 1 : 0, r.nextInt(1000)];
    };
    expect(run()).toEqual(run());
  });
});
