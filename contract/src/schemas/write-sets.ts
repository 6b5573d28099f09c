import { Type } from "@sinclair/typebox";
import { expectedVersion } from "./catalog.js";
import { key, queueName } from "./identifiers.js";
import { anyJson, enumOf, integer, orNull, requiredWhen, type Wire } from "./json-schema.js";
import { written } from "./written.js";

/**
 * Write sets: catalog writes and outbox messages that commit together or not at all, in a transaction
 * or as the effect of a queue message or a subscription delivery. How many is a canonical limit, which
 * the voter checks when the command applies.
 */

export const OPERATION_KINDS = ["put", "delete", "check"] as const;

/** One operation; `version` 0 of a check, or `expectedVersion` 0: the key must not exist. */
export const OperationSchema = requiredWhen(
  Type.Object({
    op: enumOf(OPERATION_KINDS),
    key: key("The catalog key"),
    value: Type.Optional(anyJson("The document (put)")),
    expectedVersion: Type.Optional(expectedVersion),
    version: Type.Optional(
      integer(0, Number.MAX_SAFE_INTEGER, "The version the key must be at (check); 0: must not exist"),
    ),
  }),
  "op",
  { put: "value", check: "version" },
);
export type Operation = Wire<typeof OperationSchema>;

/** Milliseconds before a message is visible. */
export const delayMs = orNull(integer(0), { description: "Milliseconds before the message is visible" });

export const OutboxMessageSchema = Type.Object({
  queue: queueName("The queue to enqueue into"),
  body: anyJson("The message"),
  delayMs: Type.Optional(delayMs),
});
export type OutboxMessage = Wire<typeof OutboxMessageSchema>;

/** The fields of a write set, which the routes that take one add to their own. */
export const writeSetProperties = {
  operations: Type.Optional(orNull(Type.Array(OperationSchema))),
  outbox: Type.Optional(orNull(Type.Array(OutboxMessageSchema))),
};

export const WriteSetSchema = Type.Object(writeSetProperties);
export type WriteSet = Wire<typeof WriteSetSchema>;

/**
 * What a write set did, which the answers of the routes that take one add to their own: per operation,
 * the version a put or delete produced, or the version a check found, 0 for a key that must not exist.
 */
export const writeSetResultProperties = {
  results: Type.Array(
    Type.Object({
      op: enumOf(OPERATION_KINDS),
      key: key(),
      version: integer(0, Number.MAX_SAFE_INTEGER, "The version produced (put, delete) or checked (check)"),
    }),
  ),
  outbox: Type.Array(
    Type.Object({ queue: Type.String(), messageId: Type.String(), visibleAtMs: integer(0) }),
  ),
};

export const WriteSetFieldsSchema = Type.Object(writeSetResultProperties);
export type WriteSetFields = Wire<typeof WriteSetFieldsSchema>;

/** `POST /v1/transactions`. */
export const TransactionResultSchema = written(writeSetResultProperties);
export type TransactionResult = Wire<typeof TransactionResultSchema>;
