// TypeBox's own: the type a schema describes, as it reads before `Wire` makes it read-only.
export type { Static } from "@sinclair/typebox";
export * from "./admission-status.js";
export {
  BulkGetBodySchema,
  type BulkGetItem,
  BulkGetItemSchema,
  type BulkGetResult,
  BulkGetResultSchema,
  DeleteDocumentBodySchema,
  type DeleteResult,
  DeleteResultSchema,
  type Document,
  DocumentSchema,
  PutDocumentBodySchema,
  type PutResult,
  PutResultSchema,
} from "./catalog.js";
export * from "./cluster.js";
export * from "./command-outcome.js";
export { type DeliveryRequest, DeliveryRequestSchema } from "./delivery-request.js";
export * from "./dispatch.js";
export * from "./error-body.js";
export * from "./graph.js";
export {
  COMMAND_ID_PATTERN,
  DEAD_LETTER_SUFFIX,
  MAX_CLUSTER_MEMBER_ID_CHARS,
  MAX_EDGE_TYPE_CHARS,
  MAX_KEY_CHARS,
  MAX_QUEUE_NAME_CHARS,
  NAME_PATTERN,
  QUEUE_NAME_PATTERN,
  SCOPE_ID_PATTERN,
} from "./identifiers.js";
export type { DeepMutable, DeepReadonly, Flat, Refined, Wire, WireSchema } from "./json-schema.js";
export * from "./membership.js";
export * from "./no-body.js";
export * from "./operations.js";
export * from "./principals.js";
export * from "./query.js";
export * from "./queues.js";
export * from "./read-limits.js";
export * from "./roles.js";
export * from "./route-lanes.js";
export * from "./route-paths.js";
export * from "./route-schemas.js";
export * from "./search.js";
export * from "./subscriptions.js";
export {
  OPERATION_KINDS,
  type Operation,
  OperationSchema,
  type OutboxMessage,
  OutboxMessageSchema,
  type TransactionResult,
  TransactionResultSchema,
  type WriteSet,
  type WriteSetFields,
  WriteSetFieldsSchema,
  WriteSetSchema,
} from "./write-sets.js";
export { type Written, WrittenSchema } from "./written.js";
