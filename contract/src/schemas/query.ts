import { Type } from "@sinclair/typebox";
import { type Document, DocumentSchema } from "./catalog.js";
import { enumOf, integer, ofTypes, orNull, type Refined, type Wire } from "./json-schema.js";
import { READ_LIMITS } from "./read-limits.js";

/** `POST /v1/query`: documents by key prefix and fields, a page at a time. */

export const FILTER_OPS = ["eq", "ne", "lt", "lte", "gt", "gte", "exists"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

const optionalString = orNull(Type.String());

export const QueryRequestSchema = Type.Object({
  prefix: Type.Optional(optionalString),
  /** Every filter must hold. */
  where: Type.Optional(
    orNull(
      Type.Array(
        Type.Object({
          path: Type.String({ description: 'A JSON path: $, then .field, ."any field" or [n] steps' }),
          op: Type.Optional(enumOf([...FILTER_OPS, null])),
          value: Type.Optional(ofTypes(["string", "number", "boolean", "null"])),
        }),
        { maxItems: READ_LIMITS.maxQueryFilters },
      ),
    ),
  ),
  limit: Type.Optional(orNull(integer(1, READ_LIMITS.maxQueryResults))),
  after: Type.Optional(
    orNull(Type.String(), { description: "Resume after this key (the previous page's next)" }),
  ),
});
export type QueryRequest = Wire<typeof QueryRequestSchema>;

export const QueryPageSchema = Type.Object({
  items: Type.Array(DocumentSchema),
  next: Type.Optional(
    Type.String({
      description:
        "The after of the next page; present when the page is full or stopped at its scan or byte bound (then it may be short, even empty)",
    }),
  ),
});
export type QueryPage<T = unknown> = Refined<Wire<typeof QueryPageSchema>, "items", readonly Document<T>[]>;
