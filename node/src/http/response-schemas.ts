import { ERROR_CODES, MEMBER_STATUSES } from "@keyload/contract";
import { MAX_KEY_CHARS } from "../requests/identifiers.js";
import { ROLES } from "../requests/roles.js";
import { anyJson, arrayOf, integer, type JsonSchema, object, orNull, text } from "./json-schema.js";
import { COMMAND_ID_PATTERN } from "./request-schemas.js";

/**
 * What each route answers on success. A write answers `{"commandId", ...the state machine's result}`;
 * a read answers what the voter returns for it. These schemas document that for clients (OpenAPI) and
 * for the voter wiring; the edge does not filter responses through them.
 */

/** Contract section 6: every error body. */
export const ERROR_BODY_SCHEMA: JsonSchema = object(
  {
    error: object(
      {
        code: { enum: [...ERROR_CODES] },
        reason: { type: "string", description: "Why, more precisely than the code (e.g. HttpRequests)" },
        message: { type: "string" },
        commandId: { type: "string", pattern: COMMAND_ID_PATTERN },
        details: {
          type: "object",
          description:
            "For ResourceExhausted: governor (command or http), lane or pool (data or control), limit, limitValue",
        },
      },
      ["code", "reason", "message"],
    ),
  },
  ["error"],
);

const commandId: JsonSchema = { type: "string", pattern: COMMAND_ID_PATTERN };
const version = integer(1, Number.MAX_SAFE_INTEGER, "The version the write produced");
const key = text(1, MAX_KEY_CHARS);
const timeMs = (description?: string): JsonSchema => integer(0, Number.MAX_SAFE_INTEGER, description);
const nullable = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: "null" }] });

const sqliteLimits = object({ cacheBytes: integer(0), mmapBytes: integer(0), walLimitBytes: integer(0) }, [
  "cacheBytes",
  "mmapBytes",
  "walLimitBytes",
]);

/** `{"commandId", ...fields}`: how every write answers. */
function written(properties: Readonly<Record<string, JsonSchema>>, required = Object.keys(properties)) {
  return object({ commandId, ...properties }, ["commandId", ...required]);
}

const writeSetResult = {
  results: arrayOf(
    object({ op: { enum: ["put", "delete", "check"] }, key, version }, ["op", "key", "version"]),
  ),
  outbox: arrayOf(
    object({ queue: { type: "string" }, messageId: { type: "string" }, visibleAtMs: timeMs() }, [
      "queue",
      "messageId",
      "visibleAtMs",
    ]),
  ),
};
const queueMessage = { queue: { type: "string" }, messageId: { type: "string" } };
const subscriptionState = {
  name: { type: "string" },
  prefix: { type: "string" },
  cursor: integer(0, Number.MAX_SAFE_INTEGER, "The last change-feed sequence number acknowledged"),
};
const document = object({ key, value: anyJson("The document"), version }, ["key", "value", "version"]);
const memberFields = {
  memberId: { type: "string" },
  status: { enum: [...MEMBER_STATUSES] },
  address: { type: "string" },
  etag: { type: "string" },
  iAmAliveMs: timeMs("Entry time of the row's last I-am-alive"),
};
const member = object(memberFields, Object.keys(memberFields));
const edge = { from: key, type: { type: "string" }, to: key };
const CLUSTER_CHANGE = object(
  {
    memberId: { type: "string" },
    role: { enum: ["voter", "learner", null], description: "The member's role now; null once removed" },
    changed: { type: "boolean", description: "False when the configuration already was as asked" },
  },
  ["memberId", "role", "changed"],
);
const usage = (fields: readonly string[]): JsonSchema =>
  object(Object.fromEntries(fields.map((f) => [f, integer(0)])), fields);

export const RESPONSE_SCHEMAS = {
  "catalog.put": written({ key, version }),
  "catalog.delete": written({ key, version: { ...version, description: "The tombstone's version" } }),
  transaction: written(writeSetResult),
  "graph.putEdge": written({ ...edge, created: { type: "boolean" } }),
  "graph.deleteEdge": written(edge),
  "queue.enqueue": written({ ...queueMessage, visibleAtMs: timeMs("When the message becomes visible") }),
  "queue.lease": written({
    queue: { type: "string" },
    leaseToken: nullable({ type: "string" }),
    leaseExpiresAtMs: nullable(timeMs()),
    messages: arrayOf(
      object(
        {
          messageId: { type: "string" },
          body: anyJson("The message"),
          attempts: integer(1),
          enqueuedAtMs: timeMs(),
        },
        ["messageId", "body", "attempts", "enqueuedAtMs"],
      ),
    ),
  }),
  "queue.ack": written(queueMessage),
  "queue.nack": written({ ...queueMessage, visibleAtMs: timeMs(), deadLettered: { type: "boolean" } }),
  "queue.renew": written({ ...queueMessage, leaseExpiresAtMs: timeMs() }),
  "queue.complete": written({ ...queueMessage, ...writeSetResult }),
  "subscription.put": written({ ...subscriptionState, created: { type: "boolean" } }),
  "subscription.deliver": written({
    name: { type: "string" },
    deliveryId: nullable({ type: "string" }),
    leaseExpiresAtMs: nullable(timeMs()),
    changes: arrayOf({ type: "object", description: "A change-feed entry" }),
    cursor: integer(0),
    trimmed: nullable(
      object(
        { fromSeq: integer(1), throughSeq: integer(1) },
        ["fromSeq", "throughSeq"],
        "Changes past the cursor that retention removed before they were read; null when none",
      ),
    ),
  }),
  "subscription.ack": written(subscriptionState),
  "subscription.complete": written({ ...subscriptionState, ...writeSetResult }),
  "membership.put": written({ ...memberFields, tableVersion: integer(0) }),
  "dispatch.append": written({ channel: { type: "string" }, sequence: integer(1) }),
  "admin.putPrincipal": written({
    principalId: { type: "string" },
    tenantId: { type: "string" },
    roles: arrayOf({ enum: [...ROLES] }),
    created: { type: "boolean" },
  }),
  "admin.createKey": written({
    principalId: { type: "string" },
    keyId: { type: "string" },
    apiKey: { type: "string", description: "The plain API key: shown this once, stored only as a hash" },
  }),
  "admin.deleteKey": written({ principalId: { type: "string" }, keyId: { type: "string" } }),
  "catalog.get": document,
  "catalog.bulkGet": object(
    {
      items: arrayOf({
        anyOf: [
          object({ key, found: { const: true }, value: anyJson("The document"), version }, [
            "key",
            "found",
            "value",
            "version",
          ]),
          object({ key, found: { const: false } }, ["key", "found"]),
        ],
      }),
      remaining: {
        ...arrayOf(key),
        description: "The keys not answered yet (the page reached its byte bound): ask for them next",
      },
    },
    ["items"],
  ),
  query: object(
    {
      items: arrayOf(document),
      next: {
        type: "string",
        description:
          "The after of the next page; present when the page is full or stopped at its scan or byte bound (then it may be short, even empty)",
      },
    },
    ["items"],
  ),
  search: object(
    {
      hits: arrayOf(
        object(
          {
            key,
            value: anyJson("The document"),
            version,
            score: { type: "number", description: "BM25: lower is better" },
          },
          ["key", "value", "version", "score"],
        ),
      ),
      next: object(
        { score: { type: "number" }, key },
        ["score", "key"],
        "The after of the next page; present when the page is full or stopped at its byte bound",
      ),
    },
    ["hits"],
  ),
  "graph.traverse": object(
    {
      nodes: arrayOf(
        object({ id: key, depth: integer(0), via: nullable(object(edge, ["from", "type", "to"])) }, [
          "id",
          "depth",
          "via",
        ]),
      ),
      truncated: {
        type: "boolean",
        description: "The traversal stopped at its node limit, its bound on edges followed or its byte bound",
      },
    },
    ["nodes", "truncated"],
  ),
  "command.get": object(
    {
      commandId,
      status: {
        enum: ["committed", "failed", "expired"],
        description: "expired: applied, but only its dedupe record remains (the result is gone)",
      },
      index: integer(1),
      result: anyJson("The command's result (committed)"),
      failed: { type: "boolean", description: "Whether it committed as a refusal (expired)" },
      errorCode: nullable({ enum: [...ERROR_CODES] }),
      error: object(
        { code: { enum: [...ERROR_CODES] }, reason: { type: "string" }, message: { type: "string" } },
        ["code", "reason", "message"],
        "The deterministic refusal it committed as (failed)",
      ),
    },
    ["commandId", "status", "index"],
  ),
  "membership.list": object({ tableVersion: integer(0), members: arrayOf(member) }, [
    "tableVersion",
    "members",
  ]),
  "dispatch.read": object(
    {
      channel: { type: "string" },
      directives: arrayOf(
        object(
          {
            sequence: integer(1),
            directive: { type: "string" },
            data: anyJson("null when none"),
            atMs: timeMs(),
          },
          ["sequence", "directive", "data", "atMs"],
        ),
      ),
    },
    ["channel", "directives"],
  ),
  "admin.admissionStatus": object(
    {
      nodeId: { type: "string" },
      commandAdmission: object(
        {
          limits: { type: "object", description: "Every CommandAdmission property, camelCase" },
          data: usage(["commands", "retainedBytes", "queued", "active"]),
          control: usage(["commands", "retainedBytes", "queued", "active"]),
          verifiedScopes: arrayOf({ type: "object" }),
        },
        ["limits", "data", "control", "verifiedScopes"],
      ),
      httpAdmission: object(
        {
          limits: { type: "object", description: "Every HttpAdmission property, camelCase" },
          data: usage(["requests", "modeledBytes"]),
          control: usage(["requests", "modeledBytes"]),
          ingress: usage(["data", "control"]),
          verifiedScopes: arrayOf({ type: "object" }),
        },
        ["limits", "data", "control", "ingress", "verifiedScopes"],
      ),
      disk: object(
        {
          freeBytes: {
            ...orNull(integer(0)),
            description: "Free on the data dir's filesystem (null: not measured yet)",
          },
          reserveBytes: { ...orNull(integer(0)), description: "What one more snapshot of the state takes" },
          softFloorBytes: integer(
            0,
            Number.MAX_SAFE_INTEGER,
            "Below it, data commands are refused (DiskFloor)",
          ),
          hardFloorBytes: integer(0, Number.MAX_SAFE_INTEGER, "Below it, every client write is refused"),
          state: { enum: ["ok", "soft", "hard"] },
        },
        ["freeBytes", "reserveBytes", "softFloorBytes", "hardFloorBytes", "state"],
      ),
      storageLimits: object(
        { log: sqliteLimits, state: sqliteLimits, search: sqliteLimits },
        ["log", "state", "search"],
        "Each database's page cache, mapping and WAL size limit, in bytes",
      ),
    },
    ["nodeId", "commandAdmission", "httpAdmission", "disk", "storageLimits"],
  ),
  "cluster.members": object(
    {
      leader: { type: ["string", "null"], description: "The voter name of the leader, if known" },
      lastIndex: { ...orNull(integer(0)), description: "The leader's last log index (null from a follower)" },
      members: arrayOf(
        object(
          {
            memberId: { type: "string" },
            name: { type: "string", description: "The voter process that holds the member ID" },
            role: { enum: ["voter", "learner"] },
            match: { ...integer(0), description: "Leader only: how far the member's log matches" },
          },
          ["memberId", "name", "role"],
        ),
      ),
    },
    ["leader", "lastIndex", "members"],
  ),
  "cluster.addLearner": CLUSTER_CHANGE,
  "cluster.promote": CLUSTER_CHANGE,
  "cluster.remove": CLUSTER_CHANGE,
  "cluster.transferLeader": object(
    {
      leader: { type: "string", description: "The member ID of the leader now" },
      changed: { type: "boolean", description: "False when that voter already led" },
    },
    ["leader", "changed"],
  ),
} as const satisfies Readonly<Record<string, JsonSchema>>;

export const HEALTH_SCHEMA: JsonSchema = object(
  { live: { type: "boolean" }, ready: { type: "boolean" }, detail: { type: "object" } },
  ["live", "ready", "detail"],
);
