import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { COMMAND_KINDS, type CommandKind } from "../requests/command-kinds.js";
import { hashApiKey } from "./api-key.js";
import { type CommandEnvelope, commandDigest, decodeCommand, encodeCommand } from "./command-envelope.js";

const BASE: CommandEnvelope = {
  commandId: "cmd-1",
  kind: "catalog.put",
  tenant: "t1",
  principal: "p1",
  timestampMs: 1_700_000_000_000,
  monotonicMs: 42_000,
  params: { key: "users/1" },
  payload: '{"value":{"name":"Ada"}}',
};

function header(envelope: Record<string, unknown>): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(envelope));
  const out = new Uint8Array(7 + json.byteLength);
  out.set([0x4b, 0x4c, 2], 0);
  new DataView(out.buffer).setUint32(3, json.byteLength);
  out.set(json, 7);
  return out;
}

function malformed(data: Uint8Array): string {
  try {
    decodeCommand(data);
  } catch (error) {
    return (error as { reason: string }).reason;
  }
  throw new Error("decoded");
}

const { payload: _, ...BASE_HEADER } = BASE;

describe("command envelope", () => {
  it("round-trips every kind with its route parameters, unescaped payload bytes included", () => {
    const values: Record<string, string> = {
      key: "k/é/✓",
      queue: "jobs",
      messageId: "7.0",
      name: "s1",
      deliveryId: "d1",
      memberId: "silo-1",
      channel: "control",
      principalId: "svc",
      keyId: "k1",
    };
    for (const [kind, names] of Object.entries(COMMAND_KINDS)) {
      const params = Object.fromEntries(names.map((name) => [name, values[name]!]));
      const envelope: CommandEnvelope = {
        ...BASE,
        kind: kind as CommandKind,
        params,
        payload: '{"text":"quotes \\" and ünïcode"}',
        ...(kind === "admin.createKey" ? { generated: { keyHash: hashApiKey("k") } } : {}),
      };
      expect(decodeCommand(encodeCommand(envelope))).toEqual(envelope);
    }
    const encoded = encodeCommand(BASE);
    expect(Buffer.from(encoded).toString("utf8").endsWith(BASE.payload)).toBe(true);
    // The key that sent a request travels with it; an entry not made from one carries none.
    const keyed = { ...BASE, keyId: "k0123456789abcdef0123456" };
    expect(decodeCommand(encodeCommand(keyed))).toEqual(keyed);
    expect(decodeCommand(encoded)).not.toHaveProperty("keyId");
  });

  it("encodes a payload given as its UTF-8 bytes as it encodes the same payload's text", () => {
    const payload = '{"value":"é€😀 and \\"quotes\\""}';
    const fromBytes = encodeCommand({ ...BASE, payload: new TextEncoder().encode(payload) });
    expect(fromBytes).toEqual(encodeCommand({ ...BASE, payload }));
    expect(decodeCommand(fromBytes)).toEqual({ ...BASE, payload });
  });

  it("round-trips arbitrary valid envelopes", () => {
    const id = fc.stringMatching(/^[A-Za-z0-9._:-]{1,128}$/);
    fc.assert(
      fc.property(
        id,
        id,
        fc.string({ maxLength: 200 }),
        fc.nat(),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 40 }),
        (commandId, tenant, payload, ts, monotonic, key) => {
          fc.pre(!/[\uD800-\uDFFF]/.test(key + payload));
          const envelope: CommandEnvelope = {
            ...BASE,
            commandId,
            tenant,
            payload,
            timestampMs: ts,
            monotonicMs: monotonic,
            params: { key },
          };
          expect(decodeCommand(encodeCommand(envelope))).toEqual(envelope);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses malformed envelopes with InvalidArgument, naming what is wrong", () => {
    const good = encodeCommand(BASE);
    expect(malformed(new Uint8Array(0))).toBe("MalformedEnvelope");
    expect(malformed(new TextEncoder().encode("{}"))).toBe("MalformedEnvelope");
    expect(malformed(Uint8Array.from([0x4b, 0x4c, 9, 0, 0, 0, 0]))).toBe("MalformedEnvelope");
    const truncated = good.slice();
    new DataView(truncated.buffer).setUint32(3, good.byteLength);
    expect(malformed(truncated)).toBe("MalformedEnvelope");
    expect(malformed(Uint8Array.from([...header(BASE_HEADER), 0xff, 0xfe]))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, kind: "catalog.upsert" }))).toBe("MalformedEnvelope");
    // A kind that is no string, not even one a template could print.
    expect(malformed(header({ ...BASE_HEADER, kind: { toString: 1 } }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, kind: ["catalog.put"] }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, extra: 1 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, params: {} }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, params: { key: "k", queue: "q" } }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, params: { key: 5 } }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, timestampMs: -1 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, timestampMs: 1.5 }))).toBe("MalformedEnvelope");
    const { monotonicMs: _monotonic, ...unstamped } = BASE_HEADER;
    expect(malformed(header(unstamped))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, monotonicMs: -1 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, monotonicMs: 1.5 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, quorumWallMs: -1 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, quorumWallMs: "1" }))).toBe("MalformedEnvelope");
    // Format 1 carried no monotonic reading.
    const formatOne = header(BASE_HEADER);
    formatOne[2] = 1;
    expect(malformed(formatOne)).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, keyId: 7 }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, keyId: "" }))).toBe("InvalidIdentifier");
    expect(malformed(header({ ...BASE_HEADER, generated: { keyHash: hashApiKey("x") } }))).toBe(
      "MalformedEnvelope",
    );
    const createKey = { ...BASE_HEADER, kind: "admin.createKey", params: { principalId: "p" } };
    expect(malformed(header(createKey))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...createKey, generated: { keyHash: "ABC" } }))).toBe("MalformedEnvelope");
    expect(malformed(header({ ...BASE_HEADER, commandId: "has space" }))).toBe("InvalidCommandId");
    expect(malformed(header({ ...BASE_HEADER, commandId: "x".repeat(129) }))).toBe("InvalidCommandId");
    expect(malformed(header({ ...BASE_HEADER, tenant: "" }))).toBe("InvalidIdentifier");
    expect(malformed(header({ ...BASE_HEADER, params: { key: "" } }))).toBe("InvalidKey");
    expect(malformed(header({ ...BASE_HEADER, params: { key: "k".repeat(513) } }))).toBe("InvalidKey");
    expect(malformed(header({ ...BASE_HEADER, params: { key: "\uD800" } }))).toBe("InvalidKey");
    const enqueue = { ...BASE_HEADER, kind: "queue.enqueue" };
    expect(malformed(header({ ...enqueue, params: { queue: "no/slash" } }))).toBe("InvalidIdentifier");
    expect(malformed(header({ ...enqueue, params: { queue: "q".repeat(250) } }))).toBe("InvalidIdentifier");
    expect(
      decodeCommand(header({ ...enqueue, params: { queue: `${"q".repeat(244)}.dead-letter` } })).params.queue,
    ).toHaveLength(256);
  });

  it("digests kind, route parameters and payload only", () => {
    const digest = commandDigest(BASE).toString("hex");
    const same = [
      { ...BASE, principal: "someone-else" },
      { ...BASE, keyId: "another-key" },
      { ...BASE, timestampMs: 5 },
      { ...BASE, monotonicMs: 5 },
      { ...BASE, tenant: "t2" },
    ];
    for (const envelope of same) expect(commandDigest(envelope).toString("hex")).toBe(digest);
    const different = [
      { ...BASE, kind: "catalog.delete" as const },
      { ...BASE, params: { key: "users/2" } },
      { ...BASE, payload: `${BASE.payload} ` },
    ];
    for (const envelope of different) expect(commandDigest(envelope).toString("hex")).not.toBe(digest);
    const createKey: CommandEnvelope = {
      ...BASE,
      kind: "admin.createKey",
      params: { principalId: "p" },
      payload: "",
    };
    expect(commandDigest({ ...createKey, generated: { keyHash: hashApiKey("a") } })).toEqual(
      commandDigest({ ...createKey, generated: { keyHash: hashApiKey("b") } }),
    );
  });
});
