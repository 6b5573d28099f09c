import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FRAME_HEADER_BYTES, FrameDecoder } from "./frame-codec.js";
import { PeerProtocolError } from "./peer-errors.js";

interface Decoded {
  readonly type: number;
  readonly body: number[];
}

const frames: Decoded[] = [
  { type: 1, body: [] },
  { type: 16, body: [1, 2, 3] },
  { type: 2, body: Array.from({ length: 300 }, (_, i) => i % 256) },
  { type: 255, body: [0] },
];

function stream(list: readonly Decoded[]): Uint8Array {
  return Buffer.concat(list.map((f) => encodeFrame(f.type, Uint8Array.from(f.body))));
}

function decodeChunks(chunks: readonly Uint8Array[], maxFrameBytes?: number): Decoded[] {
  const decoder = new FrameDecoder(maxFrameBytes);
  const out: Decoded[] = [];
  for (const chunk of chunks) decoder.push(chunk, (type, body) => out.push({ type, body: [...body] }));
  return out;
}

describe("frame codec", () => {
  it("writes a big-endian body length and the type before the body", () => {
    expect([...encodeFrame(7, Uint8Array.from([9, 8]))]).toEqual([0, 0, 0, 2, 7, 9, 8]);
  });

  it("decodes the same frames wherever the stream is split in two", () => {
    const bytes = stream(frames);
    for (let at = 0; at <= bytes.length; at++) {
      expect(decodeChunks([bytes.subarray(0, at), bytes.subarray(at)])).toEqual(frames);
    }
  });

  it("decodes the same frames from a stream fed one byte at a time", () => {
    const bytes = stream(frames);
    const chunks = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
    expect(decodeChunks(chunks)).toEqual(frames);
  });

  it("decodes the same frames from any chunking", () => {
    const frame = fc.record({
      type: fc.integer({ min: 0, max: 255 }),
      body: fc.array(fc.nat(255), { maxLength: 40 }),
    });
    fc.assert(
      fc.property(
        fc.array(frame, { maxLength: 8 }),
        fc.array(fc.nat(60), { maxLength: 20 }),
        (list, cuts) => {
          const bytes = stream(list);
          const chunks: Uint8Array[] = [];
          let at = 0;
          for (const cut of cuts) {
            chunks.push(bytes.subarray(at, Math.min(bytes.length, at + cut)));
            at = Math.min(bytes.length, at + cut);
          }
          chunks.push(bytes.subarray(at));
          expect(decodeChunks(chunks)).toEqual(list);
        },
      ),
    );
  });

  it("hands out a frame inside one chunk as a view of it", () => {
    const bytes = stream(frames);
    const bodies: Uint8Array[] = [];
    new FrameDecoder().push(bytes, (_type, body) => bodies.push(body));
    for (const body of bodies) expect(body.buffer).toBe(bytes.buffer);
  });

  it("refuses a frame over the limit from its header alone, and accepts one at the limit", () => {
    const atLimit = encodeFrame(1, new Uint8Array(100));
    expect(decodeChunks([atLimit], 100)).toHaveLength(1);
    const decoder = new FrameDecoder(99);
    const push = () => decoder.push(atLimit.subarray(0, FRAME_HEADER_BYTES), () => {});
    expect(push).toThrow(PeerProtocolError);
    expect(push).toThrow(/100 bytes exceeds the limit of 99/);
    // A forged 4 GiB length is refused the same way, without waiting for (or allocating) the body.
    expect(() => new FrameDecoder().push(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 1]), () => {})).toThrow(
      /4294967295 bytes exceeds the limit of 67108864/,
    );
  });

  it("applies a raised limit to the frames that follow in the same chunk", () => {
    const decoder = new FrameDecoder(10);
    const bytes = stream([
      { type: 1, body: [1] },
      { type: 2, body: Array.from({ length: 50 }, () => 0) },
    ]);
    const types: number[] = [];
    decoder.push(bytes, (type) => {
      types.push(type);
      decoder.maxFrameBytes = 1000;
    });
    expect(types).toEqual([1, 2]);
  });
});
