import { randomFillSync } from "node:crypto";

/** Bytes the pool draws from the CSPRNG at once: 256 command IDs' worth. */
const DEFAULT_POOL_BYTES = 4096;

/**
 * Random bytes handed out from a buffer that is refilled a few kilobytes at a time. A call into the
 * CSPRNG for each command ID's 16 bytes cost several times the rest of making the ID; one call now
 * serves 256 IDs. No two calls get the same bytes.
 */
export class RandomPool {
  private readonly pool: Uint8Array;
  private offset: number;

  constructor(
    size: number = DEFAULT_POOL_BYTES,
    private readonly fill: (bytes: Uint8Array) => void = (bytes) => {
      randomFillSync(bytes);
    },
  ) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`a pool of ${size} bytes`);
    this.pool = new Uint8Array(size);
    this.offset = size;
  }

  /** Fills `bytes` with random bytes that no other call gets, and returns it. */
  fillRandom(bytes: Uint8Array): Uint8Array {
    if (bytes.length > this.pool.length) {
      this.fill(bytes);
      return bytes;
    }
    if (this.offset + bytes.length > this.pool.length) {
      this.fill(this.pool);
      this.offset = 0;
    }
    bytes.set(this.pool.subarray(this.offset, this.offset + bytes.length));
    this.offset += bytes.length;
    return bytes;
  }
}
