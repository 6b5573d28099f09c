import type Database from "better-sqlite3";
import type { Documents, StoredDocument } from "./documents.js";
import { checkKey } from "./identifiers.js";
import { invalid, isJsonObject, optionalArray, optionalInteger, optionalString } from "./json-body.js";
import { prefixRange } from "./key-range.js";
import { READ_LIMITS } from "./read-limits.js";

export type FilterOp = "eq" | "ne" | "lt" | "lte" | "gt" | "gte" | "exists";

export interface FieldFilter {
  /** A JSON path: `$`, then `.field`, `."any field"` or `[n]` steps. */
  readonly path: string;
  readonly op: FilterOp;
  /** A JSON scalar; for `exists`, whether the path must exist. */
  readonly value: string | number | boolean | null;
}

export interface QueryRequest {
  readonly prefix: string;
  readonly where: readonly FieldFilter[];
  readonly limit: number;
  /** Resume after this key (the previous page's `next`). */
  readonly after: string | undefined;
}

export interface QueryPage {
  readonly items: StoredDocument[];
  /** Present when the page is full: pass it as `after` for the next page. */
  readonly next?: string;
}

export type BulkGetItem =
  | (StoredDocument & { readonly found: true })
  | { readonly key: string; readonly found: false };

const PATH = /^\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\."[^"\\]*"|\[[0-9]{1,9}\])*$/;
const MAX_PATH_CHARS = 256;
const OPS: readonly FilterOp[] = ["eq", "ne", "lt", "lte", "gt", "gte", "exists"];
const COMPARE: Record<"lt" | "lte" | "gt" | "gte", string> = { lt: "<", lte: "<=", gt: ">", gte: ">=" };

/** Validates a `POST /v1/catalog/bulk-get` body: `{"keys":[...]}`. */
export function parseBulkGetRequest(body: unknown): string[] {
  if (!isJsonObject(body)) throw invalid("the bulk-get body must be a JSON object");
  const keys = optionalArray(body, "keys");
  if (keys === undefined) throw invalid("keys is required");
  if (keys.length > READ_LIMITS.maxBulkKeys)
    throw invalid(`bulk-get takes at most ${READ_LIMITS.maxBulkKeys} keys`);
  return keys.map((key) => {
    if (typeof key !== "string") throw invalid("every key must be a string");
    return checkKey("key", key);
  });
}

/** Validates a `POST /v1/query` body: `{"prefix"?,"where"?:[{"path","op"?,"value"}],"limit"?,"after"?}`. */
export function parseQueryRequest(body: unknown): QueryRequest {
  if (!isJsonObject(body)) throw invalid("the query body must be a JSON object");
  const where = optionalArray(body, "where") ?? [];
  if (where.length > READ_LIMITS.maxQueryFilters) {
    throw invalid(`a query takes at most ${READ_LIMITS.maxQueryFilters} filters`);
  }
  return {
    prefix: optionalString(body, "prefix") ?? "",
    where: where.map(parseFilter),
    limit: optionalInteger(body, "limit", 1, READ_LIMITS.maxQueryResults) ?? READ_LIMITS.defaultQueryResults,
    after: optionalString(body, "after"),
  };
}

function parseFilter(raw: unknown): FieldFilter {
  if (!isJsonObject(raw)) throw invalid("a filter must be a JSON object");
  const path = optionalString(raw, "path");
  if (path === undefined || path.length > MAX_PATH_CHARS || !PATH.test(path)) {
    throw invalid("a filter path must look like $.field.nested[0]", "InvalidQuery");
  }
  const op = (optionalString(raw, "op") ?? "eq") as FilterOp;
  if (!OPS.includes(op)) throw invalid(`a filter op is one of ${OPS.join(", ")}`, "InvalidQuery");
  const value = raw.value;
  if (op === "exists") {
    if (typeof value !== "boolean") throw invalid("an exists filter takes a boolean value", "InvalidQuery");
  } else if (op === "eq" || op === "ne") {
    if (value !== null && !["string", "number", "boolean"].includes(typeof value)) {
      throw invalid("an eq/ne filter compares with a JSON scalar", "InvalidQuery");
    }
  } else if (typeof value !== "string" && typeof value !== "number") {
    throw invalid(`a ${op} filter compares with a string or a number`, "InvalidQuery");
  }
  return { path, op, value: value as FieldFilter["value"] };
}

/** Bulk get and filtered queries over the live documents of one tenant, in key order. */
export class CatalogQueries {
  constructor(
    private readonly db: Database.Database,
    private readonly documents: Documents,
  ) {}

  bulkGet(tenant: string, keys: readonly string[]): BulkGetItem[] {
    return keys.map((key) => {
      const doc = this.documents.get(tenant, key);
      return doc === undefined ? { key, found: false } : { ...doc, found: true };
    });
  }

  query(tenant: string, request: QueryRequest): QueryPage {
    const range = prefixRange(request.prefix);
    const clauses = ["tenant = ?", "value IS NOT NULL", "key >= ?", "key < ?"];
    const params: (string | number)[] = [tenant, range.low, range.high];
    if (request.after !== undefined) {
      clauses.push("key > ?");
      params.push(request.after);
    }
    for (const filter of request.where) clauses.push(filterSql(filter, params));
    params.push(request.limit);
    const rows = this.db
      .prepare<(string | number)[], { key: string; version: number; value: string }>(
        `SELECT key, version, value FROM documents WHERE ${clauses.join(" AND ")} ORDER BY key LIMIT ?`,
      )
      .all(...params);
    const items = rows.map((row) => ({ key: row.key, value: JSON.parse(row.value), version: row.version }));
    const last = items.at(-1);
    return items.length === request.limit && last !== undefined ? { items, next: last.key } : { items };
  }
}

/**
 * One filter as SQL. json_type tells the JSON types apart (json_extract alone turns true into 1), so a
 * filter matches only values of the type it compares with.
 */
function filterSql(filter: FieldFilter, params: (string | number)[]): string {
  const { path, op, value } = filter;
  if (op === "exists") {
    params.push(path);
    return value === true ? "json_type(value, ?) IS NOT NULL" : "json_type(value, ?) IS NULL";
  }
  let sql: string;
  if (value === null || typeof value === "boolean") {
    params.push(path);
    sql = `json_type(value, ?) = '${value === null ? "null" : String(value)}'`;
  } else {
    const types = typeof value === "string" ? "('text')" : "('integer', 'real')";
    const operator = op === "eq" || op === "ne" ? "=" : COMPARE[op];
    params.push(path, path, value);
    sql = `(json_type(value, ?) IN ${types} AND json_extract(value, ?) ${operator} ?)`;
  }
  return op === "ne" ? `NOT coalesce(${sql}, 0)` : sql;
}
