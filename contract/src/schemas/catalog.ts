import { Type } from "@sinclair/typebox";
import { key } from "./identifiers.js";
import { anyJson, constant, integer, orNull, type Refined, type Wire } from "./json-schema.js";
import { READ_LIMITS } from "./read-limits.js";
import { written } from "./written.js";

/** Catalog documents: put, delete, get and bulk get (contract section 4's catalog shapes). */

/** A document's version: 1 for its first write, one more for each write after. */
export function documentVersion(description = "The version the write produced") {
  return integer(1, Number.MAX_SAFE_INTEGER, description);
}

export const expectedVersion = orNull(integer(0), {
  description: "Apply only if the key is at this version; 0: only if the key does not exist",
});

export const PutDocumentBodySchema = Type.Object({
  value: anyJson("The document, any JSON value"),
  expectedVersion: Type.Optional(expectedVersion),
});

export const DeleteDocumentBodySchema = orNull(
  Type.Object({ expectedVersion: Type.Optional(expectedVersion) }),
);

export const PutResultSchema = written({ key: key(), version: documentVersion() });
export type PutResult = Wire<typeof PutResultSchema>;

export const DeleteResultSchema = written({
  key: key(),
  version: documentVersion("The tombstone's version"),
});
export type DeleteResult = Wire<typeof DeleteResultSchema>;

export const DocumentSchema = Type.Object({
  key: key(),
  value: anyJson("The document"),
  version: documentVersion(),
});
export type Document<T = unknown> = Refined<Wire<typeof DocumentSchema>, "value", T>;

export const BulkGetBodySchema = Type.Object({
  keys: Type.Array(key("A catalog key"), { maxItems: READ_LIMITS.maxBulkKeys }),
});

export const BulkGetItemSchema = Type.Union([
  Type.Object({
    key: key(),
    found: constant(true),
    value: anyJson("The document"),
    version: documentVersion(),
  }),
  Type.Object({ key: key(), found: constant(false) }),
]);
export type BulkGetItem<T = unknown> = Refined<Wire<typeof BulkGetItemSchema>, "value", T>;

export const BulkGetResultSchema = Type.Object({
  /** One per key, in request order, until the page's byte bound. */
  items: Type.Array(BulkGetItemSchema),
  remaining: Type.Optional(
    Type.Array(key(), {
      description: "The keys not answered yet (the page reached its byte bound): ask for them next",
    }),
  ),
});
export type BulkGetResult<T = unknown> = Refined<
  Wire<typeof BulkGetResultSchema>,
  "items",
  readonly BulkGetItem<T>[]
>;
