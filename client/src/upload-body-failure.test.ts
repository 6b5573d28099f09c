import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConnectionError, UnknownWriteOutcomeError } from "./index.js";
import { scriptedVoters } from "./test-fixtures/scripted-client.js";
import { errorBody, type ScriptedAnswer } from "./test-fixtures/scripted-voter.js";

/**
 * A streamed body the caller's own iterable breaks off is cut before its last chunk, so no voter can
 * have taken the request: it is ConnectionError `BodyFailed`, the caller's error its cause, neither
 * retried (it would break again) nor counted as a write that may have applied.
 */

const OK_PUT: ScriptedAnswer = { status: 200, body: { commandId: "c", key: "k", version: 1 } };
const UNKNOWN: ScriptedAnswer = {
  status: 504,
  body: errorBody("UnknownWriteOutcome", "ReplicationDeadline"),
};
const PATH = "/v1/catalog/k";

const { voter, client } = scriptedVoters();

/** A body that sends its first chunk, then throws `error`. */
async function* breaking(error: Error): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode('{"value":');
  await new Promise((resolve) => setTimeout(resolve, 10));
  throw error;
}

/** A body opener that counts its opens; from open number `breakFrom` on, the body breaks with `error`. */
function opener(error: Error, breakFrom = 1): { open: () => AsyncIterable<Uint8Array>; opens: () => number } {
  let opens = 0;
  return {
    open: () => {
      opens++;
      return opens >= breakFrom ? breaking(error) : Readable.from([Buffer.from('{"value":1}')]);
    },
    opens: () => opens,
  };
}

describe("an upload whose body stream throws", () => {
  it("ends in ConnectionError BodyFailed, the caller's error its cause, without a retry", async () => {
    const v = await voter(OK_PUT);
    const c = client([v.url]);
    const broke = new Error("the caller's source broke");
    const body = opener(broke);
    const error = await c.upload("PUT", PATH, body.open, { commandId: "cmd-b" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({
      reason: "BodyFailed",
      mayHaveReachedVoter: false,
      commandId: "cmd-b",
      endpoint: v.url,
    });
    expect((error as Error).cause).toBe(broke);
    expect(body.opens()).toBe(1);
    // A one-shot stream, a Readable too, and a raw request alike.
    for (const send of [
      () => c.upload("PUT", PATH, breaking(broke)),
      () => c.upload("PUT", PATH, Readable.from(breaking(broke))),
      () => c.raw({ method: "PUT", path: PATH, body: breaking(broke) }),
    ]) {
      await expect(send()).rejects.toMatchObject({ reason: "BodyFailed", cause: broke });
    }
    expect(v.requests).toHaveLength(0);
  });

  it("still ends in UnknownWriteOutcome after an attempt that may have committed", async () => {
    const v = await voter(UNKNOWN, OK_PUT);
    const body = opener(new Error("broke"), 2);
    const error = await client([v.url])
      .upload("PUT", PATH, body.open, { commandId: "cmd-u" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ reason: "RetriesExhausted", commandId: "cmd-u" });
    expect((error as Error).cause).toMatchObject({ name: "ConnectionError", reason: "BodyFailed" });
    expect(body.opens()).toBe(2);
  });

  it("ends resolveOutcome at once, its outcome still unknown", async () => {
    const v = await voter(OK_PUT);
    const c = client([v.url]);
    const body = opener(new Error("broke"));
    const error = await c
      .resolveOutcome("cmd-r", (o) => c.upload("PUT", PATH, body.open, o), { deadlineMs: 2_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ reason: "ResolveFailed", commandId: "cmd-r" });
    expect((error as Error).cause).toMatchObject({ name: "ConnectionError", reason: "BodyFailed" });
    expect(body.opens()).toBe(1);
  });
});
