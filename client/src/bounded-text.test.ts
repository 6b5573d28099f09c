import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { readBoundedText } from "./bounded-text.js";

const bytes = (...parts: string[]) => Readable.from(parts.map((part) => Buffer.from(part)));

describe("readBoundedText", () => {
  it("reads a body up to its cap, exactly, as UTF-8 without a BOM", async () => {
    expect(await readBoundedText(bytes("\uFEFF{", '"é":1}'), 100)).toBe('{"é":1}');
    expect(await readBoundedText(bytes("abc", "de"), 5)).toBe("abcde");
    expect(await readBoundedText(bytes(), 0)).toBe("");
  });

  it("stops past the cap and destroys the body", async () => {
    const body = bytes("abc", "def", "ghi");
    expect(await readBoundedText(body, 5)).toBeUndefined();
    expect(body.destroyed).toBe(true);
  });
});
