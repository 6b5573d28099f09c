import { RandomPool } from "./random-pool.js";

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/** Serves `uuidV7()` called without random bytes of its own. */
const sharedPool = new RandomPool();

/**
 * A UUIDv7 (RFC 9562): a 48-bit Unix millisecond timestamp, then version 7, 74 random bits and the
 * RFC variant. Command IDs sort by creation time, which keeps a voter's command-outcome index local,
 * and the random part makes two clients' IDs collide with negligible probability.
 * Of `random`'s 16 bytes the first 6 are overwritten by the timestamp; the rest, but the version and
 * variant bits, stay random.
 */
export function uuidV7(
  nowMs: number = Date.now(),
  random: Uint8Array = sharedPool.fillRandom(new Uint8Array(16)),
): string {
  if (!Number.isSafeInteger(nowMs) || nowMs < 0 || nowMs > 0xffff_ffff_ffff) {
    throw new RangeError(`a UUIDv7 timestamp is 48 bits of milliseconds, not ${nowMs}`);
  }
  if (random.length < 16) throw new RangeError("a UUIDv7 needs 16 random bytes");
  const bytes = Uint8Array.from(random.subarray(0, 16));
  // 2^32 splits the timestamp: bitwise operators would truncate it to 32 bits.
  const high = Math.floor(nowMs / 0x1_0000_0000);
  const low = nowMs % 0x1_0000_0000;
  bytes[0] = (high >>> 8) & 0xff;
  bytes[1] = high & 0xff;
  bytes[2] = (low >>> 24) & 0xff;
  bytes[3] = (low >>> 16) & 0xff;
  bytes[4] = (low >>> 8) & 0xff;
  bytes[5] = low & 0xff;
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  let id = "";
  for (let i = 0; i < 16; i++) {
    // The dashes of the 8-4-4-4-12 form go before bytes 4, 6, 8 and 10.
    if (i === 4 || i === 6 || i === 8 || i === 10) id += "-";
    id += HEX[bytes[i]!]!;
  }
  return id;
}

/** The largest value of the 12-bit counter in `rand_a`. */
const MAX_COUNTER = 0xfff;

/**
 * Makes UUIDv7s that strictly increase (as strings too) from one generator, however fast they are asked
 * for and whatever the clock does: RFC 9562 section 6.2, method 1. `rand_a` holds a 12-bit counter,
 * seeded randomly (its top bit clear, leaving at least 2048 steps) at each new millisecond and
 * incremented within one; `rand_b` stays random. A clock that stands still or steps back keeps the last
 * timestamp, and a counter that runs out moves the timestamp one millisecond ahead of the clock, so
 * order never depends on the clock. One per client keeps its command IDs, and so a voter's
 * command-outcome index, in creation order.
 */
export class UuidV7Generator {
  private lastMs = -1;
  private counter = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly fillRandom: (bytes: Uint8Array) => Uint8Array = poolFill(),
  ) {}

  next(): string {
    const random = this.fillRandom(new Uint8Array(16));
    const nowMs = Math.floor(this.now());
    if (nowMs > this.lastMs) {
      this.lastMs = nowMs;
      this.counter = seedCounter(random);
    } else if (this.counter < MAX_COUNTER) {
      this.counter++;
    } else {
      this.lastMs++;
      this.counter = seedCounter(random);
    }
    // rand_a is the low nibble of byte 6 and all of byte 7; uuidV7 sets the version nibble above it.
    random[6] = this.counter >>> 8;
    random[7] = this.counter & 0xff;
    return uuidV7(this.lastMs, random);
  }
}

/** A random start for a millisecond's counter, below 2^11 so at least 2048 IDs fit before it runs out. */
function seedCounter(random: Uint8Array): number {
  return ((random[6]! & 0x07) << 8) | random[7]!;
}

/** A generator's own pool of random bytes. */
function poolFill(): (bytes: Uint8Array) => Uint8Array {
  const pool = new RandomPool();
  return (bytes) => pool.fillRandom(bytes);
}
