import { checkKey } from "../requests/identifiers.js";
import type { ApplyContext } from "./apply-context.js";
import type { Documents, WriteResult } from "./documents.js";
import {
  invalid,
  isJsonObject,
  type JsonObject,
  optionalArray,
  optionalInteger,
  requireInteger,
  requireString,
} from "./json-body.js";
import { checkJsonValue, type JsonValueShape } from "./json-value.js";
import type { CanonicalLimits } from "./limits.js";
import { checkQueueName } from "./queue-names.js";
import type { EnqueueResult, Queues } from "./queues.js";

/**
 * One operation as parsed: the contract's `Operation` without what the wire allows and the state
 * machine normalizes away (a null `expectedVersion`, fields the operation's kind does not read).
 */
export type Operation =
  | { readonly op: "put"; readonly key: string; readonly value: unknown; readonly expectedVersion?: number }
  | { readonly op: "delete"; readonly key: string; readonly expectedVersion?: number }
  | { readonly op: "check"; readonly key: string; readonly version: number };

export interface OutboxMessage {
  readonly queue: string;
  readonly body: unknown;
  readonly shape: JsonValueShape;
  readonly delayMs: number;
}

/** Catalog writes and outbox messages that commit together or not at all. */
export interface WriteSet {
  readonly operations: readonly Operation[];
  readonly outbox: readonly OutboxMessage[];
}

export interface WriteSetResult {
  readonly results: (WriteResult & { readonly op: Operation["op"] })[];
  readonly outbox: EnqueueResult[];
}

/**
 * Reads `{"operations":[...],"outbox":[...]}` from a body: the shape of `POST /v1/transactions` and the
 * writes of processing and projection effects. Each operation is `{"op":"put","key","value",
 * "expectedVersion"?}`, `{"op":"delete","key","expectedVersion"?}` or `{"op":"check","key","version"}`
 * (version 0: the key must not exist); each outbox message is `{"queue","body","delayMs"?}`.
 */
export function parseWriteSet(body: JsonObject, limits: CanonicalLimits): WriteSet {
  const operations = optionalArray(body, "operations") ?? [];
  const outbox = optionalArray(body, "outbox") ?? [];
  if (operations.length > limits.maxTransactionOperations) {
    throw invalid(`at most ${limits.maxTransactionOperations} operations per command`, "TooManyOperations");
  }
  if (outbox.length > limits.maxOutboxMessages) {
    throw invalid(`at most ${limits.maxOutboxMessages} outbox messages per command`, "TooManyOutboxMessages");
  }
  return {
    operations: operations.map(parseOperation),
    outbox: outbox.map((raw) => parseOutboxMessage(raw, limits)),
  };
}

function parseOperation(raw: unknown): Operation {
  if (!isJsonObject(raw)) throw invalid("an operation must be a JSON object");
  const key = checkKey("key", requireString(raw, "key"));
  const op = raw.op;
  const expectedVersion = optionalInteger(raw, "expectedVersion", 0, Number.MAX_SAFE_INTEGER);
  const condition = expectedVersion === undefined ? {} : { expectedVersion };
  switch (op) {
    case "put":
      if (!("value" in raw)) throw invalid("a put needs a value");
      return { op, key, value: raw.value, ...condition };
    case "delete":
      return { op, key, ...condition };
    case "check":
      return { op, key, version: requireInteger(raw, "version", 0, Number.MAX_SAFE_INTEGER) };
    default:
      throw invalid("an operation's op is put, delete or check");
  }
}

function parseOutboxMessage(raw: unknown, limits: CanonicalLimits): OutboxMessage {
  if (!isJsonObject(raw)) throw invalid("an outbox message must be a JSON object");
  if (!("body" in raw)) throw invalid("an outbox message needs a body");
  const shape = checkJsonValue(raw.body);
  return {
    queue: checkQueueName(requireString(raw, "queue")),
    body: raw.body,
    shape,
    delayMs: optionalInteger(raw, "delayMs", 0, limits.maxDelayMs) ?? 0,
  };
}

/** Applies a write set in order; the caller's savepoint undoes all of it when any step refuses. */
export function applyWriteSet(
  ctx: ApplyContext,
  documents: Documents,
  queues: Queues,
  writes: WriteSet,
): WriteSetResult {
  const results = writes.operations.map((operation) => applyOperation(ctx, documents, operation));
  const outbox = writes.outbox.map((message, ordinal) =>
    queues.enqueue(ctx, message.queue, message, message.delayMs, ordinal),
  );
  return { results, outbox };
}

function applyOperation(
  ctx: ApplyContext,
  documents: Documents,
  operation: Operation,
): WriteResult & { readonly op: Operation["op"] } {
  if (operation.op === "put") {
    return { op: "put", ...documents.put(ctx, operation.key, operation.value, operation.expectedVersion) };
  }
  if (operation.op === "delete") {
    return { op: "delete", ...documents.delete(ctx, operation.key, operation.expectedVersion) };
  }
  return { op: "check", ...documents.check(ctx.tenant, operation.key, operation.version) };
}
