import { describe, expect, it } from "vitest";
import { parseWireOutcomes } from "./command-router.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("a leader's answer to a forwarded batch", () => {
  it("reads each command's outcome", () => {
    const answer = bytes(
      JSON.stringify({
        outcomes: [
          { ok: true, value: { index: 7, duplicate: false, result: { version: 1 } } },
          { ok: false, error: { code: "FailedPrecondition", reason: "VersionMismatch", message: "m" } },
          {
            ok: false,
            error: { code: "ResourceExhausted", reason: "DiskFloor", message: "m" },
            retryAfterSeconds: 5,
          },
        ],
      }),
    );
    expect(parseWireOutcomes(answer, 3)).toEqual([
      { ok: true, value: { index: 7, duplicate: false, result: { version: 1 } } },
      { ok: false, error: { code: "FailedPrecondition", reason: "VersionMismatch", message: "m" } },
      {
        ok: false,
        error: { code: "ResourceExhausted", reason: "DiskFloor", message: "m" },
        retryAfterSeconds: 5,
      },
    ]);
  });

  it("is malformed when it is not JSON, names no outcomes, or holds the wrong number or shape", () => {
    const ok = { ok: true, value: { index: 7, duplicate: false } };
    expect(parseWireOutcomes(bytes("{"), 1)).toBeNull();
    expect(parseWireOutcomes(bytes(JSON.stringify({ outcomeX: [ok] })), 1)).toBeNull();
    expect(parseWireOutcomes(bytes(JSON.stringify({ outcomes: [ok, ok] })), 1)).toBeNull();
    expect(parseWireOutcomes(bytes(JSON.stringify({ outcomes: [{ ok: true, value: {} }] })), 1)).toBeNull();
    expect(parseWireOutcomes(bytes(JSON.stringify({ outcomes: [7] })), 1)).toBeNull();
  });
});
