import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ResourceExhaustedError } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { BodyGuard } from "./body-guard.js";

describe("BodyGuard", () => {
  it("counts up to the cap and fails past it", () => {
    const guard = new BodyGuard("data", 100);
    guard.count(60);
    guard.count(40);
    expect(guard.bytesRead).toBe(100);
    expect(() => guard.count(1)).toThrow(ResourceExhaustedError);
    expect(() => new BodyGuard("data", 5).count(6)).toThrow(
      expect.objectContaining({
        code: "ResourceExhausted",
        reason: "BodyTooLarge",
        details: expect.objectContaining({
          governor: "http",
          pool: "data",
          limit: "MaxDataBodyBytes",
          limitValue: 5,
          requested: 6,
        }),
      }),
    );
  });

  it("works as a pipeline stage over a streamed body", async () => {
    const within = new BodyGuard("data", 8);
    const seen: number[] = [];
    await pipeline(
      Readable.from([Buffer.from("abcd"), Buffer.from("efgh")]),
      (source: AsyncIterable<Uint8Array>) => within.guard(source),
      async (source: AsyncIterable<Uint8Array>) => {
        for await (const chunk of source) seen.push(chunk.byteLength);
      },
    );
    expect(seen).toEqual([4, 4]);

    const over = new BodyGuard("control", 7);
    await expect(
      pipeline(
        Readable.from([Buffer.from("abcd"), Buffer.from("efgh")]),
        (source: AsyncIterable<Uint8Array>) => over.guard(source),
        async (source: AsyncIterable<Uint8Array>) => {
          for await (const _ of source);
        },
      ),
    ).rejects.toMatchObject({ reason: "BodyTooLarge", status: 413 });
  });
});
