import { describe, expect, it } from "vitest";
import { ConnectionError, InvalidArgumentError, KeyLoadClient } from "./index.js";
import { scriptedVoters } from "./test-fixtures/scripted-client.js";
import type { ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * Requests undici refuses before they leave the process (a header it cannot send, a path it cannot
 * encode): nothing reached a voter, so they are neither retried nor reported as an unknown outcome.
 */

const OK_PUT = { status: 200, body: { commandId: "c", key: "k", version: 1 } };

const scripted = scriptedVoters();
const voter = (): Promise<ScriptedVoter> => scripted.voter(OK_PUT);
const client = scripted.client;

describe("requests that cannot leave the process", () => {
  it("refuses a command ID outside the contract's pattern before sending, naming it", async () => {
    const v = await voter();
    const c = client([v.url]);
    for (const commandId of ["a\nb", "", "x".repeat(129), "a b", "é"]) {
      const error = await c.put("k", 1, { commandId }).catch((e: unknown) => e);
      expect(error, JSON.stringify(commandId)).toBeInstanceOf(InvalidArgumentError);
      expect(error).toMatchObject({ reason: "InvalidCommandId", commandId });
    }
    const resolved = await c.resolveOutcome("bad\nid", (o) => c.put("k", 1, o)).catch((e: unknown) => e);
    expect(resolved).toBeInstanceOf(InvalidArgumentError);
    expect(v.requests).toHaveLength(0);
    // The pattern's edges are accepted.
    await c.put("k", 1, { commandId: "A-z.0_9:-".padEnd(128, "x") });
    expect(v.requests).toHaveLength(1);
  });

  it("refuses a body JSON cannot hold before sending, naming the write's command ID", async () => {
    const v = await voter();
    const c = client([v.url]);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const value of [1n, circular, { toJSON: () => [2n] }]) {
      const error = await c.put("k", value, { commandId: "c-json" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect(error).toMatchObject({ reason: "InvalidBody", commandId: "c-json" });
      expect((error as Error).message).toMatch(/BigInt|circular/);
    }
    const generated = await c.enqueue("q", 3n).catch((e: unknown) => e);
    expect(generated).toMatchObject({
      name: "InvalidArgumentError",
      reason: "InvalidBody",
      commandId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7/),
    });
    // A read that takes a body too, without a command ID.
    const read = await c.bulkGet([4n] as unknown as string[]).catch((e: unknown) => e);
    expect(read).toBeInstanceOf(InvalidArgumentError);
    expect(read).toMatchObject({ reason: "InvalidBody", commandId: undefined });
    expect((read as Error).cause).toBeInstanceOf(TypeError);
    expect(v.requests).toHaveLength(0);
  });

  it("refuses an API key that cannot be sent in a header, without showing it", () => {
    for (const apiKey of ["secret\n", "sec ret", "sécret", ""]) {
      const make = () => new KeyLoadClient({ endpoints: ["http://127.0.0.1:1"], apiKey });
      expect(make, JSON.stringify(apiKey)).toThrow(InvalidArgumentError);
      expect(make).toThrow(expect.objectContaining({ reason: "InvalidClientOption" }));
      if (apiKey !== "")
        expect(make).toThrow(expect.not.objectContaining({ message: expect.stringContaining("sec") }));
    }
  });

  it("reports a request undici refuses as NotSent, once, and not as possibly delivered", async () => {
    const v = await voter();
    const error = await client([v.url])
      .raw({ method: "GET", path: "/v1/catalog/k", headers: { "x-bad": "a\nb" }, commandId: "c-raw" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).toMatchObject({ reason: "NotSent", mayHaveReachedVoter: false, commandId: "c-raw" });
    expect(v.requests).toHaveLength(0);
  });

  it("refuses a path parameter that cannot be percent-encoded, naming the write's command ID", async () => {
    const v = await voter();
    const c = client([v.url]);
    const error = await c.put("a\ud800b", 1, { commandId: "c-lone" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ reason: "InvalidParameter", commandId: "c-lone" });
    const generated = await c.delete("\udc00").catch((e: unknown) => e);
    expect(generated).toBeInstanceOf(InvalidArgumentError);
    expect(generated).toMatchObject({ commandId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7/) });
    await expect(c.get("\ud800")).rejects.toMatchObject({
      name: "InvalidArgumentError",
      reason: "InvalidParameter",
    });
    expect(v.requests).toHaveLength(0);
  });
});
