import { Type } from "@sinclair/typebox";
import { visibilityTimeoutMs } from "./delivery-request.js";
import { anyJson, integer, nullable, type Refined, type Wire } from "./json-schema.js";
import { delayMs, writeSetProperties, writeSetResultProperties } from "./write-sets.js";
import { written } from "./written.js";

/** Queues: enqueue, lease, ack, nack, renew and the processing effect (complete). */

const leaseToken = Type.String({ description: "The token of the lease that holds the message" });

export const EnqueueBodySchema = Type.Object({
  body: anyJson("The message, any JSON value"),
  delayMs: Type.Optional(delayMs),
});
export const AckBodySchema = Type.Object({ leaseToken });
export const NackBodySchema = Type.Object({ leaseToken, delayMs: Type.Optional(delayMs) });
export const RenewBodySchema = Type.Object({
  leaseToken,
  visibilityTimeoutMs: Type.Optional(visibilityTimeoutMs),
});
export const CompleteBodySchema = Type.Object({ leaseToken, ...writeSetProperties });

const queueMessage = { queue: Type.String(), messageId: Type.String() };

/** `POST .../ack`: the message acknowledged. */
export const QueueMessageRefSchema = written(queueMessage);
export type QueueMessageRef = Wire<typeof QueueMessageRefSchema>;

export const EnqueueResultSchema = written({
  ...queueMessage,
  visibleAtMs: integer(0, Number.MAX_SAFE_INTEGER, "When the message becomes visible"),
});
export type EnqueueResult = Wire<typeof EnqueueResultSchema>;

export const LeasedMessageSchema = Type.Object({
  messageId: Type.String(),
  body: anyJson("The message"),
  /** Leases this message has received, this one included. */
  attempts: integer(1),
  enqueuedAtMs: integer(0),
});
export type LeasedMessage<T = unknown> = Refined<Wire<typeof LeasedMessageSchema>, "body", T>;

export const LeaseResultSchema = written({
  queue: Type.String(),
  /** Null when no message was visible. */
  leaseToken: nullable(Type.String()),
  leaseExpiresAtMs: nullable(integer(0)),
  messages: Type.Array(LeasedMessageSchema),
});
export type LeaseResult<T = unknown> = Refined<
  Wire<typeof LeaseResultSchema>,
  "messages",
  readonly LeasedMessage<T>[]
>;

export const NackResultSchema = written({
  ...queueMessage,
  visibleAtMs: integer(0),
  deadLettered: Type.Boolean(),
});
export type NackResult = Wire<typeof NackResultSchema>;

export const RenewResultSchema = written({ ...queueMessage, leaseExpiresAtMs: integer(0) });
export type RenewResult = Wire<typeof RenewResultSchema>;

/** The processing effect: the message acknowledged and the write set applied, atomically. */
export const CompleteResultSchema = written({ ...queueMessage, ...writeSetResultProperties });
export type CompleteResult = Wire<typeof CompleteResultSchema>;
