import { createHash } from "node:crypto";
import { checkKey } from "../requests/identifiers.js";
import { READ_LIMITS } from "../requests/read-limits.js";
import { invalid, isJsonObject, optionalInteger, optionalString } from "./json-body.js";

export interface SearchRequest {
  /** Words to find, all of them; a word ending in `*` matches as a prefix. */
  readonly query: string;
  /** Only keys starting with this. */
  readonly prefix: string;
  readonly limit: number;
  /** Resume after this hit (the previous page's `next`): hits ranked after it, by score, then key. */
  readonly after: SearchCursor | undefined;
}

/** A hit's place in the ranking: BM25 score (lower is a better match), then key. */
export interface SearchCursor {
  readonly score: number;
  readonly key: string;
}

const MAX_TERMS = 32;
const WORD = /[\p{L}\p{N}]/u;

/** Validates a `POST /v1/search` body: `{"query","prefix"?,"limit"?,"after"?:{"score","key"}}`. */
export function parseSearchRequest(body: unknown): SearchRequest {
  if (!isJsonObject(body)) throw invalid("the search body must be a JSON object");
  const query = optionalString(body, "query");
  if (query === undefined) throw invalid("query is required");
  matchExpression("t", query);
  return {
    query,
    prefix: optionalString(body, "prefix") ?? "",
    limit:
      optionalInteger(body, "limit", 1, READ_LIMITS.maxSearchResults) ?? READ_LIMITS.defaultSearchResults,
    after: parseCursor(body.after),
  };
}

function parseCursor(raw: unknown): SearchCursor | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isJsonObject(raw) || typeof raw.score !== "number" || !Number.isFinite(raw.score)) {
    throw invalid('after is the previous page\'s next: {"score":<number>,"key":<string>}');
  }
  const key = optionalString(raw, "key");
  if (key === undefined) throw invalid("after.key is required");
  return { score: raw.score, key: checkKey("after.key", key) };
}

/** A query within one tenant: the FTS5 expression, for that tenant's table only. */
export interface TenantMatch {
  /** The tenant's token (see tenantToken), which names its table in the index. */
  readonly token: string;
  readonly expression: string;
}

/**
 * The FTS5 expression for a query within one tenant. Every word is quoted as an FTS5 string, so user
 * text is never parsed as query syntax. The tenant's token goes with it: each tenant has its own table
 * in the index, so one tenant's query never matches, nor is ranked by, another's documents.
 */
export function matchExpression(tenantToken: string, query: string): TenantMatch {
  const terms = query
    .split(/\s+/u)
    .filter((word) => WORD.test(word))
    .map((word) => {
      const prefix = word.length > 1 && word.endsWith("*");
      const text = (prefix ? word.slice(0, -1) : word).replaceAll('"', '""');
      return prefix ? `"${text}" *` : `"${text}"`;
    });
  if (terms.length === 0) throw invalid("the search query holds no words", "InvalidQuery");
  if (terms.length > MAX_TERMS)
    throw invalid(`a search query holds at most ${MAX_TERMS} words`, "InvalidQuery");
  return { token: tenantToken, expression: `body : (${terms.join(" AND ")})` };
}

const tokens = new Map<string, string>();

/** A tenant ID as a safe SQL identifier part (`t` and 24 hex digits): the name of its table in the index. */
export function tenantToken(tenant: string): string {
  let token = tokens.get(tenant);
  if (token === undefined) {
    token = `t${createHash("sha256").update(tenant).digest("hex").slice(0, 24)}`;
    if (tokens.size >= 10_000) tokens.clear();
    tokens.set(tenant, token);
  }
  return token;
}
