import { Type } from "@sinclair/typebox";
import { MAX_KEY_CHARS } from "./identifiers.js";
import { anyJson, enumOf, integer, nullable, text, type Wire } from "./json-schema.js";
import { writeSetProperties, writeSetResultProperties } from "./write-sets.js";
import { written } from "./written.js";

/** Subscriptions to the change feed: create, deliver, ack and the projection effect (complete). */

export const PutSubscriptionBodySchema = Type.Object({
  prefix: text(0, MAX_KEY_CHARS, "Deliver changes of keys with this prefix"),
  from: Type.Optional(enumOf(["beginning", "end", null], "Where a new subscription starts")),
});
export const CompleteDeliveryBodySchema = Type.Object(writeSetProperties);

const subscriptionState = {
  name: Type.String(),
  prefix: Type.String(),
  cursor: integer(0, Number.MAX_SAFE_INTEGER, "The last change-feed sequence number acknowledged"),
};

export const SubscriptionStateSchema = Type.Object(subscriptionState);
export type SubscriptionState = Wire<typeof SubscriptionStateSchema>;

export const PutSubscriptionResultSchema = written({ ...subscriptionState, created: Type.Boolean() });
export type PutSubscriptionResult = Wire<typeof PutSubscriptionResultSchema>;

export const CHANGE_KINDS = ["put", "delete", "edge.put", "edge.delete"] as const;

export const ChangeSchema = Type.Object(
  {
    /** Per tenant, dense, from 1. */
    seq: integer(1),
    kind: enumOf(CHANGE_KINDS),
    key: Type.String(),
    /** The document version the change produced; null for edges. */
    version: nullable(integer(1)),
    /** The document put (null once superseded), the edge, or null for a delete. */
    value: anyJson("The document put (null once superseded), the edge, or null for a delete"),
    superseded: Type.Boolean(),
    atMs: integer(0),
  },
  { description: "A change-feed entry" },
);
export type Change = Wire<typeof ChangeSchema>;

export const DeliveryResultSchema = written({
  name: Type.String(),
  /** Null when nothing matched: no lease is held and the cursor moved past what was scanned. */
  deliveryId: nullable(Type.String()),
  leaseExpiresAtMs: nullable(integer(0)),
  changes: Type.Array(ChangeSchema),
  cursor: integer(0),
  trimmed: nullable(
    Type.Object(
      { fromSeq: integer(1), throughSeq: integer(1) },
      {
        description: "Changes past the cursor that retention removed before they were read; null when none",
      },
    ),
  ),
});
export type DeliveryResult = Wire<typeof DeliveryResultSchema>;

export const AckDeliveryResultSchema = written(subscriptionState);
export type AckDeliveryResult = Wire<typeof AckDeliveryResultSchema>;

/** The projection effect: the delivery acknowledged and the write set applied, atomically. */
export const CompleteDeliveryResultSchema = written({ ...subscriptionState, ...writeSetResultProperties });
export type CompleteDeliveryResult = Wire<typeof CompleteDeliveryResultSchema>;
