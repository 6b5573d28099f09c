import { Buffer } from "node:buffer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ENVELOPE_OVERHEAD_BYTES,
  modeledBytes,
  payloadSize,
  retainedBytes,
  utf8ByteLength,
} from "./payload-accounting.js";

const encoder = new TextEncoder();

describe("utf8ByteLength", () => {
  it.each([
    ["empty", "", 0],
    ["ASCII", '{"value":42}', 12],
    ["two-byte BMP", "é", 2],
    ["three-byte BMP", "€語", 6],
    ["astral (surrogate pair)", "😀", 4],
    ["lone high surrogate", "\ud83d", 3],
    ["lone low surrogate", "\ude00", 3],
    ["reversed pair", "\ude00\ud83d", 6],
    ["high surrogate at the end", "a😀\ud83d", 8],
    ["high surrogate before a non-surrogate", "\ud83dx", 4],
  ])("counts %s like an encoder", (_name, text, bytes) => {
    expect(utf8ByteLength(text)).toBe(bytes);
    expect(utf8ByteLength(text)).toBe(Buffer.byteLength(text, "utf8"));
    expect(utf8ByteLength(text)).toBe(encoder.encode(text).length);
  });

  it("matches the encoded length of any string, lone surrogates included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 64 }), (text) => {
        expect(utf8ByteLength(text)).toBe(encoder.encode(text).length);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 64 }), (units) => {
        const text = String.fromCharCode(...units);
        expect(utf8ByteLength(text)).toBe(encoder.encode(text).length);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("retainedBytes", () => {
  it.each([
    ["empty", "", 0, 0],
    ["ASCII", "hello", 5, 5],
    ["BMP", "é€", 2, 5],
    ["astral", "😀", 2, 4],
    ["lone surrogate", "x\ud800", 2, 4],
  ])("is 2 x UTF-16 units + 2 x UTF-8 bytes + 4096 for %s", (_name, text, units, utf8) => {
    expect(text.length).toBe(units);
    expect(Buffer.byteLength(text)).toBe(utf8);
    expect(payloadSize(text)).toEqual({ utf16Length: units, utf8Length: utf8 });
    expect(retainedBytes(payloadSize(text))).toBe(2 * units + 2 * utf8 + ENVELOPE_OVERHEAD_BYTES);
  });
});

describe("modeledBytes", () => {
  it("is working space + 4 x admitted body + 4096", () => {
    expect(modeledBytes(64 * 1024 * 1024, 100)).toBe(64 * 1024 * 1024 + 400 + 4096);
    expect(modeledBytes(0, 65536)).toBe(4 * 65536 + 4096);
  });
});
