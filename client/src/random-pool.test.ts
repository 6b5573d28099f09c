import { describe, expect, it } from "vitest";
import { RandomPool } from "./random-pool.js";

/** A fill that writes a running count, so every byte the pool hands out can be traced. */
function countingFill() {
  let next = 0;
  const calls: number[] = [];
  const fill = (bytes: Uint8Array) => {
    calls.push(bytes.length);
    for (let i = 0; i < bytes.length; i++) bytes[i] = next++ & 0xff;
  };
  return { fill, calls };
}

describe("RandomPool", () => {
  it("hands out each byte it drew once, drawing a pool at a time", () => {
    const { fill, calls } = countingFill();
    const pool = new RandomPool(64, fill);
    const seen: number[] = [];
    for (let i = 0; i < 10; i++) seen.push(...pool.fillRandom(new Uint8Array(16)));
    // 10 × 16 bytes from pools of 64: three draws, the last one's second half unused so far.
    expect(calls).toEqual([64, 64, 64]);
    expect(seen).toEqual(Array.from({ length: 160 }, (_, i) => i));
  });

  it("draws afresh when what is left is shorter than the request", () => {
    const { fill, calls } = countingFill();
    const pool = new RandomPool(40, fill);
    pool.fillRandom(new Uint8Array(16));
    pool.fillRandom(new Uint8Array(16));
    expect([...pool.fillRandom(new Uint8Array(16))]).toEqual(Array.from({ length: 16 }, (_, i) => 40 + i));
    expect(calls).toEqual([40, 40]);
  });

  it("fills a request larger than the pool directly", () => {
    const { fill, calls } = countingFill();
    const pool = new RandomPool(8, fill);
    expect(pool.fillRandom(new Uint8Array(20))).toHaveLength(20);
    expect(calls).toEqual([20]);
  });

  it("gives different bytes from the CSPRNG by default", () => {
    const pool = new RandomPool();
    const ids = new Set(
      Array.from({ length: 1000 }, () => Buffer.from(pool.fillRandom(new Uint8Array(16))).toString("hex")),
    );
    expect(ids.size).toBe(1000);
  });

  it("refuses a pool of no bytes", () => {
    expect(() => new RandomPool(0)).toThrow(RangeError);
  });
});
