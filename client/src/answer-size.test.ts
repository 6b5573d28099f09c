import { describe, expect, it } from "vitest";
import { InternalError, UnknownWriteOutcomeError } from "./index.js";
import { scriptedClients } from "./test-fixtures/scripted-client.js";

/**
 * An answer's body is read only up to a cap no answer of the contract reaches: past it the body is
 * dropped and the call ends, as AnswerTooLarge, without another attempt to fetch the same again.
 */

const setup = scriptedClients();

describe("an answer's size", () => {
  it("caps an error body small: Internal for a read, UnknownWriteOutcome for a write, never retried", async () => {
    const { v, c } = await setup([{ status: 503, body: `<html>${"x".repeat(1024 * 1024)}</html>` }]);
    const read = await c.get("k").catch((e: unknown) => e);
    expect(read).toBeInstanceOf(InternalError);
    expect(read).toMatchObject({ reason: "AnswerTooLarge", endpoint: v.url });
    expect(v.requests).toHaveLength(1);
    const write = await c.put("k", 1, { commandId: "cmd-big" }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(write).toMatchObject({ reason: "AnswerTooLarge", commandId: "cmd-big" });
    expect(v.requests).toHaveLength(2);
  });

  it("caps a successful answer above the largest page the contract answers", async () => {
    const { v, c } = await setup([
      { status: 200, body: `{"items":[],"x":"${"x".repeat(65 * 1024 * 1024)}"}` },
    ]);
    const error = await c.query({ prefix: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalError);
    expect(error).toMatchObject({ reason: "AnswerTooLarge" });
    expect(v.requests).toHaveLength(1);
  });
});
