import { PeerProtocolError } from "./peer-errors.js";

/**
 * Appends primitive values to a growing buffer. Unsigned integers are LEB128 varints: terms, indexes
 * and lengths are small, so most take one or two bytes, and any safe integer fits in eight.
 */
export class BinaryWriter {
  private buf: Buffer;
  private pos = 0;

  /** Give a good estimate: growing copies what was written so far. */
  constructor(capacity = 256) {
    // Unzeroed memory is safe here: only the written prefix is ever handed out.
    this.buf = Buffer.allocUnsafe(Math.max(16, capacity));
  }

  u8(value: number): void {
    this.ensure(1);
    this.buf[this.pos++] = value;
  }

  bool(value: boolean): void {
    this.u8(value ? 1 : 0);
  }

  /** A non-negative safe integer; anything else is a bug in the caller and throws. */
  uint(value: number): void {
    if (!(value >= 0 && value <= Number.MAX_SAFE_INTEGER && Number.isInteger(value))) {
      throw new PeerProtocolError(`cannot encode ${value}: not a non-negative safe integer`);
    }
    this.ensure(8);
    const buf = this.buf;
    let pos = this.pos;
    let v = value;
    while (v >= 0x80) {
      // `& 0x7f` is exact above 2^32 too: ToInt32 keeps the low 32 bits unchanged.
      buf[pos++] = (v & 0x7f) | 0x80;
      v = v < 0x1_0000_0000 ? v >>> 7 : Math.floor(v / 128);
    }
    buf[pos++] = v;
    this.pos = pos;
  }

  /** Four bytes, big-endian: a checksum, whose bits are all significant. */
  u32(value: number): void {
    this.ensure(4);
    this.buf.writeUInt32BE(value >>> 0, this.pos);
    this.pos += 4;
  }

  f64(value: number): void {
    this.ensure(8);
    this.buf.writeDoubleBE(value, this.pos);
    this.pos += 8;
  }

  /** UTF-8 with a varint length. Ill-formed UTF-16 (a lone surrogate) is carried as U+FFFD. */
  string(value: string): void {
    const n = value.length;
    if (n < 0x80) {
      // Node ids, channels and request ids are short ASCII: skip the encoder for them.
      this.ensure(1 + n);
      const buf = this.buf;
      const start = this.pos;
      buf[start] = n;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + 1 + i] = c;
      }
      if (i === n) {
        this.pos = start + 1 + n;
        return;
      }
    }
    this.bytes(Buffer.from(value, "utf8"));
  }

  /** A varint length, then the bytes. */
  bytes(value: Uint8Array): void {
    this.uint(value.length);
    this.raw(value);
  }

  /** The bytes alone: for a field whose length is known from context (the rest of the frame). */
  raw(value: Uint8Array): void {
    this.ensure(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /** What was written; a view, so the writer must not be used afterwards. */
  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}
