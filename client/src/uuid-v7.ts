import { getRandomValues } from "node:crypto";

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * A UUIDv7 (RFC 9562): a 48-bit Unix millisecond timestamp, then version 7, 74 random bits and the
 * RFC variant. Command IDs sort by creation time, which keeps a voter's command-outcome index local,
 * and the random part makes two clients' IDs collide with negligible probability.
 * Of `random`'s 16 bytes the first 6 are overwritten by the timestamp; the rest, but the version and
 * variant bits, stay random.
 */
export function uuidV7(
  nowMs: number = Date.now(),
  random: Uint8Array = getRandomValues(new Uint8Array(16)),
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
  const hex = Array.from(bytes, (byte) => HEX[byte]).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
