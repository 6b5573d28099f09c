import { describe, expect, it } from "vitest";
import { InternalError, UnknownWriteOutcomeError } from "./index.js";
import { scriptedClients } from "./test-fixtures/scripted-client.js";

/**
 * Only a 2xx whose body is the route's answer, as the contract's schema for it says, is a success. A
 * redirect (a proxy's, most likely) or an answer of another shape is InternalError UnexpectedAnswer, and
 * for a write UnknownWriteOutcome: something answered, and it did not say whether the write committed.
 */

const setup = scriptedClients();

describe("answers outside the route's shape", () => {
  it("takes a 3xx as UnexpectedAnswer, not as a success, and does not retry it", async () => {
    const { v, c } = await setup([{ status: 302, headers: { location: "/elsewhere" }, body: {} }]);
    const read = await c.get("k").catch((e: unknown) => e);
    expect(read).toBeInstanceOf(InternalError);
    expect(read).toMatchObject({ reason: "UnexpectedAnswer", status: 302 });
    const write = await c.put("k", 1, { commandId: "cmd-3xx" }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(write).toMatchObject({ reason: "UnexpectedAnswer", commandId: "cmd-3xx", status: 302 });
    expect(v.requests).toHaveLength(2);
  });

  it("checks a 2xx body against the route's answer schema", async () => {
    const { v, c } = await setup([
      { status: 200, body: { key: "k", version: 1 } },
      { status: 200, body: { commandId: "cmd-s" } },
      { status: 200, body: { live: "yes" } },
      { status: 200, body: { items: [{ key: "k", found: "maybe" }] } },
      { status: 200, body: { key: "k", value: null, version: 2, extra: true } },
    ]);
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

  it("takes a write's answer naming another command as UnknownWriteOutcome, and does not retry it", async () => {
    const { v, c } = await setup([
      { status: 200, body: { commandId: "someone-else", key: "k", version: 4 }, verbatim: true },
      { status: 200, body: { commandId: "mine", key: "k", version: 5 } },
    ]);
    const write = await c.put("k", 1, { commandId: "mine" }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(write).toMatchObject({ reason: "UnexpectedAnswer", commandId: "mine", status: 200 });
    expect(v.requests).toHaveLength(1);
    await expect(c.put("k", 1, { commandId: "mine" })).resolves.toMatchObject({ version: 5 });
  });
});
