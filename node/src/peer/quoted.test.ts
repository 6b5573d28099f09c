import { describe, expect, it } from "vitest";
import { quoted } from "./quoted.js";

describe("quoted", () => {
  it("quotes a short string as JSON does, and cuts a long one at 64 characters", () => {
    expect(quoted("voter9")).toBe('"voter9"');
    expect(quoted('a "b"\n')).toBe('"a \\"b\\"\\n"');
    expect(quoted("x".repeat(100))).toBe(`"${"x".repeat(64)}…"`);
  });

  it("escapes DEL and the C1 controls, which JSON leaves as they are", () => {
    expect(quoted("\u009b31m\u009d0;t\u009c\u007f")).toBe('"\\u009b31m\\u009d0;t\\u009c\\u007f"');
    expect(quoted("Zoë 東京")).toBe('"Zoë 東京"');
  });

  it("bounds what it writes, escapes included, splitting none", () => {
    expect(quoted("\u001b".repeat(1_000))).toBe(`"${"\\u001b".repeat(10)}…"`);
    expect(quoted(`${"x".repeat(60)}\\\\\\`)).toBe(`"${"x".repeat(60)}\\\\\\\\…"`);
    expect(quoted(`${"x".repeat(63)}😀😀`)).toBe(`"${"x".repeat(63)}…"`);
    const long = quoted("\u009b".repeat(10_000), 8_192);
    expect(long.length).toBeLessThanOrEqual(8_192 + 3);
    expect(long).toMatch(/^"(\\u009b)+…"$/);
  });
});
