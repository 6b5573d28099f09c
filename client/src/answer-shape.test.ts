import { afterEach, describe, expect, it } from "vitest";
import { InternalError, KeyLoadClient, UnknownWriteOutcomeError } from "./index.js";
import { type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * Only a 2xx whose body is the route's answer, as the contract's schema for it says, is a success. A
 * redirect (a proxy's, most likely) or an answer of another shape is InternalError UnexpectedAnswer, and
 * for a write UnknownWriteOutcome: something answered, and it did not say whether the write committed.
 */

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

async function setup(...answers: ScriptedAnswer[]): Promise<{ v: ScriptedVoter; c: KeyLoadClient }> {
  const v = await ScriptedVoter.start(...answers);
  const c = new KeyLoadClient({
    endpoints: [v.url],
    apiKey: "key-1",
    adaptiveThrottle: false,
    backoff: { initialMs: 1, maxMs: 5 },
  });
  opened.push(v, c);
  return { v, c };
}

describe("answers outside the route's shape", () => {
  it("takes a 3xx as UnexpectedAnswer, not as a success, and does not retry it", async () => {
    const { v, c } = await setup({ status: 302, headers: { location: "/elsewhere" }, body: {} });
    const read = await c.get("k").catch((e: unknown) => e);
    expect(read).toBeInstanceOf(InternalError);
    expect(read).toMatchObject({ reason: "UnexpectedAnswer", status: 302 });
    const write = await c.put("k", 1, { commandId: "cmd-3xx" }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(write).toMatchObject({ reason: "UnexpectedAnswer", commandId: "cmd-3xx", status: 302 });
    expect(v.requests).toHaveLength(2);
  });

  it("checks a 2xx body against the route's answer schema", async () => {
    const { v, c } = await setup(
      { status: 200, body: { key: "k", version: 1 } },
      { status: 200, body: { commandId: "cmd-s" } },
      { status: 200, body: { live: "yes" } },
      { status: 200, body: { items: [{ key: "k", found: "maybe" }] } },
      { status: 200, body: { key: "k", value: null, version: 2, extra: true } },
    );
    await expect(c.get("k")).rejects.toMatchObject({ name: "InternalError", reason: "UnexpectedAnswer" });
    const write = await c.put("k", 1, { commandId: "cmd-s" }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(write).toMatchObject({ reason: "UnexpectedAnswer", commandId: "cmd-s" });
    await expect(c.live()).rejects.toMatchObject({ name: "InternalError", reason: "UnexpectedAnswer" });
    await expect(c.bulkGet(["k"])).rejects.toMatchObject({ reason: "UnexpectedAnswer" });
    // Fields the schema does not name are the voter's to add.
    await expect(c.get("k")).resolves.toMatchObject({ key: "k", value: null, version: 2 });
    expect(v.requests).toHaveLength(5);
  });
});
