import { Type } from "@sinclair/typebox";
import { documentVersion } from "./catalog.js";
import { key } from "./identifiers.js";
import { anyJson, integer, orNull, type Refined, type Wire } from "./json-schema.js";
import { READ_LIMITS } from "./read-limits.js";

/** `POST /v1/search`: full-text search, ranked by BM25 score (lower is better), then key. */

const optionalString = orNull(Type.String());

export const SearchRequestSchema = Type.Object({
  query: Type.String({ description: "Words to find, all of them; word* matches a prefix" }),
  prefix: Type.Optional(optionalString),
  limit: Type.Optional(orNull(integer(1, READ_LIMITS.maxSearchResults))),
  after: Type.Optional(
    orNull(
      Type.Object(
        { score: Type.Number(), key: key("The last hit's key") },
        {
          description:
            "Resume after this hit (the previous page's next): hits ranked after it by score, then key",
        },
      ),
    ),
  ),
});
export type SearchRequest = Wire<typeof SearchRequestSchema>;

/** A hit's place in the ranking: the `after` of the next page. */
export const SearchCursorSchema = Type.Object(
  { score: Type.Number(), key: key() },
  { description: "The after of the next page; present when the page is full or stopped at its byte bound" },
);
export type SearchCursor = Wire<typeof SearchCursorSchema>;

export const SearchHitSchema = Type.Object({
  key: key(),
  value: anyJson("The document"),
  version: documentVersion(),
  score: Type.Number({ description: "BM25: lower is better" }),
});

export const SearchResultSchema = Type.Object({
  hits: Type.Array(SearchHitSchema),
  next: Type.Optional(SearchCursorSchema),
});
export type SearchResult<T = unknown> = Refined<
  Wire<typeof SearchResultSchema>,
  "hits",
  readonly Refined<Wire<typeof SearchHitSchema>, "value", T>[]
>;
