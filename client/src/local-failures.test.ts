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

  it("refuses a body JSON would change before sending: NaN, undefined elements, functions, a Map", async () => {
    const v = await voter();
    const c = client([v.url]);
    const changed: [unknown, RegExp][] = [
      [Number.NaN, /NaN/],
      [{ n: Number.POSITIVE_INFINITY }, /"n" is Infinity/],
      [[1, undefined], /"1" is undefined/],
      [{ f: () => 1 }, /"f" is a function/],
      [[Symbol("s")], /"0" is a symbol/],
      [new Map([["a", 1]]), /Map, which JSON would send as \{\}/],
      [{ s: new Set([1]) }, /Set/],
      [new Uint8Array([1, 2]), /Uint8Array/],
      [undefined, /undefined is not JSON/],
    ];
    for (const [value, message] of changed) {
      const error = await c.put("k", value, { commandId: "c-changed" }).catch((e: unknown) => e);
      expect(error, String(message)).toBeInstanceOf(InvalidArgumentError);
      expect(error).toMatchObject({ reason: "InvalidBody", commandId: "c-changed" });
      expect((error as Error).message).toMatch(message);
    }
    expect(v.requests).toHaveLength(0);
    // What JSON holds as it is still goes: null, a Date through its toJSON, a property left undefined.
    await c.put("k", { a: null, at: new Date(0), gone: undefined, list: [1, "two", false] });
    expect(v.requests).toHaveLength(1);
    expect(JSON.parse(v.requests[0]!.body)).toEqual({
      value: { a: null, at: "1970-01-01T00:00:00.000Z", list: [1, "two", false] },
    });
  });

  it("refuses a path parameter outside the contract's shape before sending", async () => {
    const v = await voter();
    const c = client([v.url]);
    for (const key of ["", "k".repeat(513), "😀".repeat(513), ".", ".."]) {
      const error = await c.put(key, 1, { commandId: "c-key" }).catch((e: unknown) => e);
      expect(error, `a key of ${key.length} units`).toBeInstanceOf(InvalidArgumentError);
      expect(error).toMatchObject({
        reason: "InvalidParameter",
        commandId: "c-key",
        details: { parameter: "key" },
      });
    }
    await expect(c.get("")).rejects.toMatchObject({ reason: "InvalidParameter" });
    await expect(c.enqueue("no spaces", 1)).rejects.toMatchObject({ reason: "InvalidParameter" });
    await expect(c.getCommand("bad id")).rejects.toMatchObject({ reason: "InvalidParameter" });
    expect(v.requests).toHaveLength(0);
    // The bounds themselves pass: 512 characters, however many UTF-16 units they take.
    await c.put("😀".repeat(512), 1);
    await c.put("k".repeat(512), 1);
    expect(v.requests).toHaveLength(2);
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
