import { describe, expect, it } from "vitest";
import { parseRetryAfter } from "./retry-after.js";

describe("parseRetryAfter", () => {
  const now = Date.UTC(2030, 0, 1, 12, 0, 0);

  it("reads delay-seconds as milliseconds", () => {
    expect(parseRetryAfter("1", now)).toBe(1_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it("reads an HTTP-date relative to now, a past one as zero", () => {
    expect(parseRetryAfter("Tue, 01 Jan 2030 12:00:05 GMT", now)).toBe(5_000);
    expect(parseRetryAfter("Tue, 01 Jan 2030 11:00:00 GMT", now)).toBe(0);
  });

  it("ignores an absent or unreadable value", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-1", now)).toBeUndefined();
  });
});
