import { PeerProtocolError } from "./peer-errors.js";

/*
 * A frame on the peer stream: a big-endian u32 body length, a u8 frame type, then the body. The length
 * excludes the five header bytes, and is checked against the receiver's limit before any body byte is
 * buffered, so a forged length cannot make the receiver allocate.
 */

export const FRAME_HEADER_BYTES = 5;
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** The header of a frame whose body of `bodyLength` bytes is written after it. */
export function encodeFrameHeader(type: number, bodyLength: number): Uint8Array {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32BE(bodyLength, 0);
  header[4] = type;
  return header;
}

export function encodeFrame(type: number, body: Uint8Array): Uint8Array {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame[4] = type;
  frame.set(body, FRAME_HEADER_BYTES);
  return frame;
}

type FrameSink = (type: number, body: Uint8Array) => void;

/**
 * Cuts a byte stream into frames, whatever the chunk boundaries. A frame wholly inside one chunk is
 * handed out as a view of it; only a frame spanning chunks is copied, once it is complete.
 */
export class FrameDecoder {
  private parts: Uint8Array[] = [];
  private buffered = 0;
  /** Bytes needed before parsing is worth retrying: a header, or a header and its body. */
  private needed = FRAME_HEADER_BYTES;

  /** Settable so a connection can accept only small frames until its peer is authenticated. */
  constructor(public maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES) {}

  /** Emits every frame completed by `chunk`; throws PeerProtocolError for an oversize frame. */
  push(chunk: Uint8Array, emit: FrameSink): void {
    let data: Uint8Array;
    if (this.buffered === 0) {
      data = chunk;
    } else {
      this.parts.push(chunk);
      this.buffered += chunk.length;
      if (this.buffered < this.needed) return;
      data = Buffer.concat(this.parts, this.buffered);
      this.parts = [];
      this.buffered = 0;
    }
    let offset = 0;
    this.needed = FRAME_HEADER_BYTES;
    while (data.length - offset >= FRAME_HEADER_BYTES) {
      const bodyLength =
        ((data[offset]! << 24) | (data[offset + 1]! << 16) | (data[offset + 2]! << 8) | data[offset + 3]!) >>>
        0;
      if (bodyLength > this.maxFrameBytes) {
        throw new PeerProtocolError(
          `frame of ${bodyLength} bytes exceeds the limit of ${this.maxFrameBytes}`,
        );
      }
      const end = offset + FRAME_HEADER_BYTES + bodyLength;
      if (end > data.length) {
        this.needed = FRAME_HEADER_BYTES + bodyLength;
        break;
      }
      emit(data[offset + 4]!, data.subarray(offset + FRAME_HEADER_BYTES, end));
      offset = end;
    }
    if (offset < data.length) {
      this.parts.push(data.subarray(offset));
      this.buffered = data.length - offset;
    }
  }
}
