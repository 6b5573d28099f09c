import { PeerProtocolError } from "./peer-errors.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Reads what BinaryWriter wrote, validating as it goes: every read past the end, overlong or oversized
 * varint, invalid boolean or invalid UTF-8 throws PeerProtocolError. Byte fields are returned as views
 * into the input, so the input must not be reused while they are alive (socket chunks never are).
 */
export class BinaryReader {
  private pos = 0;

  constructor(private readonly buf: Uint8Array) {}

  u8(): number {
    const value = this.buf[this.pos];
    if (value === undefined) throw truncated();
    this.pos++;
    return value;
  }

  bool(): boolean {
    const value = this.u8();
    if (value > 1) throw new PeerProtocolError(`invalid boolean byte ${value}`);
    return value === 1;
  }

  uint(): number {
    const buf = this.buf;
    let byte = buf[this.pos++];
    if (byte === undefined) throw truncated();
    if (byte < 0x80) return byte;
    let value = byte & 0x7f;
    let scale = 0x80;
    for (let i = 1; i < 8; i++) {
      byte = buf[this.pos++];
      if (byte === undefined) throw truncated();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        // A zero last byte means the same value had a shorter encoding: refuse, so encodings are unique.
        if (byte === 0) throw new PeerProtocolError("overlong varint");
        if (value > Number.MAX_SAFE_INTEGER) throw new PeerProtocolError("varint exceeds 2^53 - 1");
        return value;
      }
      scale *= 0x80;
    }
    throw new PeerProtocolError("varint longer than 8 bytes");
  }

  u32(): number {
    const start = this.take(4);
    const b = this.buf;
    return ((b[start]! << 24) | (b[start + 1]! << 16) | (b[start + 2]! << 8) | b[start + 3]!) >>> 0;
  }

  f64(): number {
    const start = this.take(8);
    return new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength).getFloat64(start);
  }

  string(): string {
    const length = this.uint();
    const start = this.take(length);
    const buf = this.buf;
    if (length <= 64) {
      let s = "";
      for (let i = start; i < start + length; i++) {
        const c = buf[i]!;
        if (c >= 0x80) return decodeUtf8(buf, start, length);
        s += String.fromCharCode(c);
      }
      return s;
    }
    return decodeUtf8(buf, start, length);
  }

  /** A varint-length-prefixed byte field, as a view into the input. */
  bytes(): Uint8Array {
    const length = this.uint();
    const start = this.take(length);
    // A plain Uint8Array even when the input is a Buffer, so decoded values look the same wherever
    // they came from.
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset + start, length);
  }

  /** Exactly `length` bytes, as a view (a fixed-size field such as a nonce). */
  fixed(length: number): Uint8Array {
    const start = this.take(length);
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset + start, length);
  }

  /** Everything not read yet, as a view. */
  rest(): Uint8Array {
    return this.fixed(this.buf.length - this.pos);
  }

  /**
   * A count of items that each take at least `minBytes`: checked against what is left, so a forged
   * count cannot make the caller loop or allocate beyond the frame's size.
   */
  count(minBytes: number): number {
    const n = this.uint();
    if (n * minBytes > this.buf.length - this.pos) {
      throw new PeerProtocolError(`count ${n} does not fit in the ${this.buf.length - this.pos} bytes left`);
    }
    return n;
  }

  /** Trailing bytes mean sender and receiver disagree on the layout: refuse rather than guess. */
  end(): void {
    if (this.pos !== this.buf.length) {
      throw new PeerProtocolError(`${this.buf.length - this.pos} unexpected trailing bytes`);
    }
  }

  private take(length: number): number {
    const start = this.pos;
    if (length > this.buf.length - start) throw truncated();
    this.pos = start + length;
    return start;
  }
}

function truncated(): PeerProtocolError {
  return new PeerProtocolError("truncated: a field runs past the end of the frame");
}

function decodeUtf8(buf: Uint8Array, start: number, length: number): string {
  try {
    return utf8.decode(buf.subarray(start, start + length));
  } catch {
    throw new PeerProtocolError("invalid UTF-8 in a string field");
  }
}
