import { MEMBER_STATUSES } from "@keyload/contract";
import type { ParamName } from "../requests/command-kinds.js";
import { MAX_EDGE_TYPE_CHARS, MAX_KEY_CHARS } from "../requests/identifiers.js";
import { READ_LIMITS } from "../requests/read-limits.js";
import { ROLES } from "../requests/roles.js";
import type { ClusterParamName } from "./cluster-kinds.js";
import { anyJson, arrayOf, integer, type JsonSchema, object, orNull, text } from "./json-schema.js";
import type { ReadParamName } from "./read-kinds.js";

/**
 * What the edge checks before a command is submitted: types, required fields and identifier shapes, so
 * a malformed request answers 400 instead of committing as a failed outcome under its command ID. The
 * state machine still validates everything when it applies, against limits this layer cannot see (the
 * canonical ones are configurable); unknown fields are left alone, since tenant, principal or role claims
 * in a body are ignored rather than refused.
 */

// The identifier alphabets of node/src/requests/identifiers.ts; routes.test.ts checks they agree.
export const COMMAND_ID_PATTERN = "^[A-Za-z0-9._:-]{1,128}$";
const NAME_PATTERN = "^[A-Za-z0-9._:@-]{1,256}$";
const SCOPE_ID_PATTERN = "^[A-Za-z0-9._:@-]{1,128}$";

const name = (description: string): JsonSchema => ({ type: "string", pattern: NAME_PATTERN, description });
const scopeId = (description: string): JsonSchema => ({
  type: "string",
  pattern: SCOPE_ID_PATTERN,
  description,
});
const key = (description: string): JsonSchema => text(1, MAX_KEY_CHARS, description);
const optionalInteger = (minimum: number, maximum?: number): JsonSchema => orNull(integer(minimum, maximum));
const optionalString: JsonSchema = { type: ["string", "null"] };

export type PathParamName = ParamName | ReadParamName | ClusterParamName;

/** A Raft member ID (voter/member-name.ts checks its exact shape): a voter name, maybe ~ and 8 hex. */
const clusterMemberId = (description: string): JsonSchema => text(1, 73, description);

export const PATH_PARAM_SCHEMAS: Readonly<Record<PathParamName, JsonSchema>> = {
  key: key("A catalog key: 1-512 characters, percent-encoded in the path"),
  queue: name("A queue name"),
  messageId: name("A queue message ID"),
  name: name("A subscription name"),
  deliveryId: name("A subscription delivery ID"),
  memberId: name("A membership row ID"),
  channel: name("A dispatch channel"),
  principalId: scopeId("A principal ID"),
  keyId: name("An API key ID"),
  commandId: { type: "string", pattern: COMMAND_ID_PATTERN, description: "A command ID" },
  clusterMemberId: clusterMemberId("A Raft member ID: voter3, or voter3~1f2e3d4c for a later incarnation"),
};

export const COMMAND_ID_HEADER_SCHEMA: JsonSchema = {
  type: "string",
  pattern: COMMAND_ID_PATTERN,
  description:
    "The command's ID, scoped per tenant: a retry with the same ID and the same route and body returns the " +
    "original outcome without applying again.",
};

const expectedVersion = {
  ...optionalInteger(0),
  description: "Apply only if the key is at this version; 0: only if the key does not exist",
};
const leaseToken = { type: "string", description: "The token of the lease that holds the message" };
const delayMs = { ...optionalInteger(0), description: "Milliseconds before the message is visible" };
const visibilityTimeoutMs = { ...optionalInteger(1), description: "How long the lease hides what it holds" };

/** An operation of kind `op` needs `field` (JSON Schema's if/then, which names the missing field). */
function requiredFor(op: string, field: string): JsonSchema {
  // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword, not a thenable.
  return { if: { properties: { op: { const: op } } }, then: { required: [field] } };
}

const operation: JsonSchema = {
  ...object(
    {
      op: { enum: ["put", "delete", "check"] },
      key: key("The catalog key"),
      value: anyJson("The document (put)"),
      expectedVersion,
      version: { ...integer(0), description: "The version the key must be at (check); 0: must not exist" },
    },
    ["op", "key"],
  ),
  allOf: [requiredFor("put", "value"), requiredFor("check", "version")],
};

const outboxMessage = object(
  { queue: name("The queue to enqueue into"), body: anyJson("The message"), delayMs },
  ["queue", "body"],
);

/** Catalog writes and outbox messages applied atomically; how many is a canonical limit. */
const writeSetProperties = {
  operations: orNull(arrayOf(operation)),
  outbox: orNull(arrayOf(outboxMessage)),
};

const edge = object(
  {
    from: key("The source node (a catalog key)"),
    type: text(1, MAX_EDGE_TYPE_CHARS, "The edge type"),
    to: key("The target node (a catalog key)"),
  },
  ["from", "type", "to"],
);

const deliveryRequest = orNull(
  object({ max: optionalInteger(1), visibilityTimeoutMs }, [], "Optional; an absent body takes the defaults"),
);

const noBodyNeeded = orNull(object({}, [], "Optional and unused"));

/** The body of each route that takes one, by the command or read kind it carries. */
export const BODY_SCHEMAS = {
  "catalog.put": object({ value: anyJson("The document, any JSON value"), expectedVersion }, ["value"]),
  "catalog.delete": orNull(object({ expectedVersion })),
  transaction: object(writeSetProperties),
  "graph.putEdge": edge,
  "graph.deleteEdge": edge,
  "queue.enqueue": object({ body: anyJson("The message, any JSON value"), delayMs }, ["body"]),
  "queue.lease": deliveryRequest,
  "queue.ack": object({ leaseToken }, ["leaseToken"]),
  "queue.nack": object({ leaseToken, delayMs }, ["leaseToken"]),
  "queue.renew": object({ leaseToken, visibilityTimeoutMs }, ["leaseToken"]),
  "queue.complete": object({ leaseToken, ...writeSetProperties }, ["leaseToken"]),
  "subscription.put": object(
    {
      prefix: text(0, MAX_KEY_CHARS, "Deliver changes of keys with this prefix"),
      from: { enum: ["beginning", "end", null], description: "Where a new subscription starts" },
    },
    ["prefix"],
  ),
  "subscription.deliver": deliveryRequest,
  "subscription.ack": noBodyNeeded,
  "subscription.complete": object(writeSetProperties),
  "membership.put": {
    type: "object",
    anyOf: [
      { properties: { iAmAlive: { const: true } }, required: ["iAmAlive"] },
      {
        properties: {
          status: { enum: [...MEMBER_STATUSES] },
          address: text(1, 512),
          etag: optionalString,
          tableVersion: optionalInteger(0),
        },
        required: ["status", "address"],
      },
    ],
    description: 'A row write {"status","address","etag"?,"tableVersion"?} or {"iAmAlive":true}',
  },
  "dispatch.append": object({ directive: text(1, 256), data: anyJson("Optional directive data") }, [
    "directive",
  ]),
  "admin.putPrincipal": object(
    {
      principalId: scopeId("The principal to create or update"),
      tenantId: scopeId("The tenant it belongs to"),
      roles: { type: "array", minItems: 1, items: { enum: [...ROLES] } },
    },
    ["principalId", "tenantId", "roles"],
  ),
  "admin.createKey": noBodyNeeded,
  "admin.deleteKey": noBodyNeeded,
  "cluster.addLearner": object(
    { memberId: clusterMemberId("The new member: a voter's name, or that name, ~ and its incarnation") },
    ["memberId"],
  ),
  "cluster.promote": noBodyNeeded,
  "cluster.remove": noBodyNeeded,
  "cluster.transferLeader": object(
    { memberId: clusterMemberId("The voter to lead: its member ID, or its name") },
    ["memberId"],
  ),
  "catalog.bulkGet": object({ keys: arrayOf(key("A catalog key"), READ_LIMITS.maxBulkKeys) }, ["keys"]),
  query: object({
    prefix: optionalString,
    where: orNull(
      arrayOf(
        object(
          {
            path: { type: "string", description: 'A JSON path: $, then .field, ."any field" or [n] steps' },
            op: { enum: ["eq", "ne", "lt", "lte", "gt", "gte", "exists", null] },
            value: { type: ["string", "number", "boolean", "null"] },
          },
          ["path"],
        ),
        READ_LIMITS.maxQueryFilters,
      ),
    ),
    limit: optionalInteger(1, READ_LIMITS.maxQueryResults),
    after: { ...optionalString, description: "Resume after this key (the previous page's next)" },
  }),
  search: object(
    {
      query: { type: "string", description: "Words to find, all of them; word* matches a prefix" },
      prefix: optionalString,
      limit: optionalInteger(1, READ_LIMITS.maxSearchResults),
      after: orNull(
        object(
          { score: { type: "number" }, key: key("The last hit's key") },
          ["score", "key"],
          "Resume after this hit (the previous page's next): hits ranked after it by score, then key",
        ),
      ),
    },
    ["query"],
  ),
  "graph.traverse": object(
    {
      start: key("The node to start from"),
      direction: { enum: ["out", "in", "both", null] },
      types: orNull(arrayOf(text(1, MAX_EDGE_TYPE_CHARS))),
      maxDepth: optionalInteger(1, READ_LIMITS.maxTraverseDepth),
      limit: optionalInteger(1, READ_LIMITS.maxTraverseNodes),
    },
    ["start"],
  ),
} as const satisfies Readonly<Record<string, JsonSchema>>;

export type BodyKind = keyof typeof BODY_SCHEMAS;

/** `GET /v1/dispatch/{channel}`: read directives after a sequence number. */
export const DISPATCH_QUERY_SCHEMAS: Readonly<Record<string, JsonSchema>> = {
  after: {
    type: "string",
    pattern: "^[0-9]{1,15}$",
    description: "Directives with a sequence number above this (default 0)",
  },
  limit: {
    type: "string",
    pattern: "^[0-9]{1,4}$",
    description: `At most this many directives (default ${READ_LIMITS.defaultDispatchRead}, at most ${READ_LIMITS.maxDispatchRead})`,
  },
};
