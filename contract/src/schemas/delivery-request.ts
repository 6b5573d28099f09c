import { Type } from "@sinclair/typebox";
import { integer, orNull, type Wire } from "./json-schema.js";

/** How long a lease hides what it holds. */
export const visibilityTimeoutMs = orNull(integer(1), {
  description: "How long the lease hides what it holds",
});

/** The body of a delivery (queue messages or subscription changes), optional: an absent one takes the defaults. */
export const DeliveryRequestSchema = orNull(
  Type.Object(
    {
      /** At most this many messages or changes. */
      max: Type.Optional(orNull(integer(1))),
      visibilityTimeoutMs: Type.Optional(visibilityTimeoutMs),
    },
    { description: "Optional; an absent body takes the defaults" },
  ),
);
export type DeliveryRequest = Exclude<Wire<typeof DeliveryRequestSchema>, null>;
