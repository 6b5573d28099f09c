import { describe, expect, it } from "vitest";
import { UuidV7Generator, uuidV7 } from "./uuid-v7.js";

const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function timestampOf(uuid: string): number {
  return Number.parseInt(uuid.slice(0, 8) + uuid.slice(9, 13), 16);
}

describe("uuidV7", () => {
  it("puts the millisecond timestamp in the first 48 bits, then version 7 and the RFC variant", () => {
    const id = uuidV7(0x0123_4567_89ab, new Uint8Array(16).fill(0xff));
    expect(id).toBe("01234567-89ab-7fff-bfff-ffffffffffff");
    expect(uuidV7(0, new Uint8Array(16))).toBe("00000000-0000-7000-8000-000000000000");
  });

  it("keeps the random bytes but the version and variant bits", () => {
    const random = Uint8Array.from({ length: 16 }, (_, i) => i * 17);
    expect(uuidV7(1, random)).toBe("00000000-0001-7677-8899-aabbccddeeff");
  });

  it("is a valid command ID, sorts by time and differs within one millisecond", () => {
    const now = Date.UTC(2030, 0, 1);
    const ids = [uuidV7(now), uuidV7(now), uuidV7(now + 1)];
    for (const id of ids) {
      expect(id).toMatch(SHAPE);
      expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
    }
    expect(timestampOf(ids[0]!)).toBe(now);
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids[2]! > ids[0]! && ids[2]! > ids[1]!).toBe(true);
  });

  it("takes the current time by default", () => {
    const before = Date.now();
    const at = timestampOf(uuidV7());
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(Date.now());
  });

  it("refuses a timestamp that does not fit 48 bits, or too few random bytes", () => {
    expect(() => uuidV7(-1)).toThrow(RangeError);
    expect(() => uuidV7(2 ** 48)).toThrow(RangeError);
    expect(() => uuidV7(1.5)).toThrow(RangeError);
    expect(() => uuidV7(1, new Uint8Array(15))).toThrow(RangeError);
  });
});

function expectStrictlyIncreasing(ids: readonly string[]): void {
  for (let i = 1; i < ids.length; i++) {
    if (!(ids[i - 1]! < ids[i]!)) expect.fail(`ID ${i} (${ids[i]}) does not sort after ${ids[i - 1]}`);
  }
}

describe("UuidV7Generator", () => {
  it("makes 10,000 strictly increasing, valid v7 IDs within one millisecond", () => {
    const now = Date.UTC(2030, 0, 1);
    const generator = new UuidV7Generator(() => now);
    const ids = Array.from({ length: 10_000 }, () => generator.next());
    expectStrictlyIncreasing(ids);
    for (const id of ids) expect(id).toMatch(SHAPE);
    expect(new Set(ids).size).toBe(ids.length);
    // The counter runs out at most every 2048 IDs, each time moving a millisecond past the clock.
    expect(timestampOf(ids[0]!)).toBe(now);
    expect(timestampOf(ids.at(-1)!) - now).toBeLessThanOrEqual(Math.ceil(10_000 / 2048));
  });

  it("keeps increasing when the clock steps back, and follows it again once it is ahead", () => {
    const clock = [5_000, 5_000, 4_000, 3_999, 4_500, 5_000, 5_001, 1, 9_000];
    let tick = 0;
    const generator = new UuidV7Generator(() => clock[tick++]!);
    const ids = clock.map(() => generator.next());
    expectStrictlyIncreasing(ids);
    expect(ids.map(timestampOf)).toEqual([5_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_001, 5_001, 9_000]);
  });

  it("keeps increasing even when every random byte is the highest, carrying into the timestamp", () => {
    const generator = new UuidV7Generator(
      () => 1_000,
      (bytes) => bytes.fill(0xff),
    );
    const ids = Array.from({ length: 5_000 }, () => generator.next());
    expectStrictlyIncreasing(ids);
    expect(ids[0]).toBe("00000000-03e8-77ff-bfff-ffffffffffff");
    expect(timestampOf(ids.at(-1)!)).toBe(1_002);
  });
});
