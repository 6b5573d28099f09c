import fc from "fast-check";
import type { CommandKind, ParamName } from "../../requests/command-kinds.js";

/**
 * Generators of bad input for the commands (property tests of apply and of the HTTP edge): bodies made
 * from valid ones with fields dropped, replaced by odd JSON values (huge, negative, fractional, long,
 * empty, names of Object.prototype's members, nested) or added, and odd route parameters.
 */

/** A JSON value no validator expects. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom<unknown>(
    1e308,
    -1e308,
    2 ** 53 + 2,
    -(2 ** 53) - 2,
    -0,
    5e-324,
    0.5,
    -1,
    2 ** 31,
    2 ** 32,
    "",
    "x".repeat(5_000),
    "__proto__",
    "constructor",
    "toString",
    "\u0000",
    "\ud83d\ude00",
    [],
    {},
    null,
    true,
    JSON.parse('{"__proto__":{"polluted":1}}'),
  ),
);

/** A route parameter: mostly `usual` (one the state holds), else an odd name or any short text. */
export function param(usual: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...usual) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("constructor", "__proto__", "toString", "a/b", "x".repeat(600), ""),
    },
    { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
  );
}

/** A valid body as it is, with one or a few fields dropped, replaced by odd values or added, or one odd value whole. */
export function around(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const fields = Object.keys(valid);
  const changed = fc
    .record({
      dropped: fc.subarray(fields, { maxLength: Math.min(1, fields.length) }),
      replaced:
        fields.length === 0
          ? fc.constant({})
          : fc.dictionary(fc.constantFrom(...fields), oddValue, { maxKeys: 2 }),
      added: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom("__proto__", "constructor")), oddValue, {
        maxKeys: 1,
      }),
    })
    .map(({ dropped, replaced, added }) => {
      const body: Record<string, unknown> = { ...valid };
      for (const field of dropped) delete body[field];
      Object.assign(body, replaced);
      // defineProperty, so "__proto__" becomes a field as JSON.parse makes it, not the prototype.
      for (const [field, value] of Object.entries(added)) {
        Object.defineProperty(body, field, { value, enumerable: true, writable: true, configurable: true });
      }
      return body;
    });
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(valid) },
    { weight: 5, arbitrary: changed },
    { weight: 1, arbitrary: oddValue },
  );
}

/** What the stores hold before the odd commands: a lease's token and messages, a delivery, a member. */
export interface Held {
  readonly leaseToken: string;
  readonly messageIds: readonly string[];
  readonly deliveryId: string;
  readonly etag: string;
  readonly keyId: string;
}

/** Bodies around a valid one for each command kind, against the state `held` describes. */
export function commandBodies(held: Held): Record<CommandKind, fc.Arbitrary<unknown>> {
  const key = fc.constantFrom("a", "b", "docs/1", "docs/2");
  const operation = fc
    .tuple(fc.constantFrom("put", "delete", "check"), key)
    .chain(([op, k]) =>
      around(
        op === "put"
          ? { op, key: k, value: { n: 1 } }
          : op === "delete"
            ? { op, key: k }
            : { op, key: k, version: 1 },
      ),
    );
  const operations = fc.array(operation, { minLength: 1, maxLength: 4 });
  const outbox = fc.array(around({ queue: "jobs", body: { n: 1 }, delayMs: 0 }), { maxLength: 2 });
  const { leaseToken } = held;
  const bodies: Record<CommandKind, fc.Arbitrary<unknown>> = {
    "catalog.put": around({ value: { a: [1, "two"] }, expectedVersion: 1 }),
    "catalog.delete": around({ expectedVersion: 1 }),
    transaction: fc.tuple(operations, outbox).chain(([ops, out]) => around({ operations: ops, outbox: out })),
    "graph.putEdge": around({ from: "a", type: "knows", to: "b" }),
    "graph.deleteEdge": around({ from: "a", type: "knows", to: "b" }),
    "queue.enqueue": around({ body: { n: 1 }, delayMs: 0 }),
    "queue.lease": around({ max: 2, visibilityTimeoutMs: 5000 }),
    "queue.ack": around({ leaseToken }),
    "queue.nack": around({ leaseToken, delayMs: 1000 }),
    "queue.renew": around({ leaseToken, visibilityTimeoutMs: 5000 }),
    "queue.complete": fc
      .tuple(operations, outbox)
      .chain(([ops, out]) => around({ leaseToken, operations: ops, outbox: out })),
    "subscription.put": around({ prefix: "docs/", from: "end" }),
    "subscription.deliver": around({ max: 2, visibilityTimeoutMs: 5000 }),
    "subscription.ack": around({}),
    "subscription.complete": operations.chain((ops) => around({ operations: ops })),
    "membership.put": around({ status: "active", address: "10.0.0.1:1", etag: held.etag, tableVersion: 1 }),
    "dispatch.append": around({ directive: "drain", data: { a: 1 } }),
    "admin.putPrincipal": around({ principalId: "svc", tenantId: "t1", roles: ["writer"] }),
    "admin.createKey": around({}),
    "admin.deleteKey": around({}),
  };
  return bodies;
}

/** Route parameters for each parameter name: mostly ones the state `held` describes holds. */
export function commandParams(held: Held): Record<ParamName, fc.Arbitrary<string>> {
  const params: Record<ParamName, fc.Arbitrary<string>> = {
    key: param(["a", "b", "docs/1"]),
    queue: param(["jobs"]),
    messageId: param(held.messageIds),
    name: param(["s1"]),
    deliveryId: param([held.deliveryId]),
    memberId: param(["m1"]),
    channel: param(["ops"]),
    principalId: param(["p1", "svc"]),
    keyId: param([held.keyId]),
  };
  return params;
}
