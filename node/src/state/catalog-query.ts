import type Database from "better-sqlite3";
import { checkKey } from "../requests/identifiers.js";
import { type PageBounds, READ_LIMITS } from "../requests/read-limits.js";
import { documentJson } from "./documents.js";
import { invalid, isJsonObject, optionalArray, optionalInteger, optionalString } from "./json-body.js";
import { JsonPage } from "./json-page.js";
import { prefixRange } from "./key-range.js";
import type { IndexHit } from "./search-protocol.js";

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

// A quoted label holds no NUL: SQLite's path parser would end the path there and fail the read.
const PATH = /^\$(?:\.[A-Za-z_][A-Za-z0-9_]*|\."[^"\\\0]*"|\[[0-9]{1,9}\])*$/;
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

/**
 * Bulk gets, filtered queries and search hits over the live documents of one tenant, answered as JSON
 * text in pages bounded by rows examined and bytes returned (see READ_LIMITS). They run on the read
 * worker's own connection (see CatalogReader), each page inside one read transaction.
 */
export class CatalogQueries {
  private readonly read: Database.Statement<[string, string], { version: number; value: string }>;

  constructor(
    private readonly db: Database.Database,
    private readonly bounds: PageBounds = READ_LIMITS,
  ) {
    this.read = db.prepare(
      "SELECT version, value FROM documents WHERE tenant = ? AND key = ? AND value IS NOT NULL",
    );
  }

  /**
   * `{"items":[...],"remaining"?:[...]}`: one item per key, in request order, until the byte bound;
   * `remaining` holds the keys not answered yet, to ask for next.
   */
  bulkGet(tenant: string, keys: readonly string[]): string {
    const page = new JsonPage(this.bounds.maxPageBytes);
    for (const key of keys) {
      const row = this.read.get(tenant, key);
      const item =
        row === undefined
          ? `{"key":${JSON.stringify(key)},"found":false}`
          : documentJson(key, row, ',"found":true');
      if (!page.add(item)) break;
    }
    const remaining = keys.slice(page.count);
    const rest = remaining.length === 0 ? "" : `,"remaining":${JSON.stringify(remaining)}`;
    return `{"items":${page.array()}${rest}}`;
  }

  /**
   * `{"items":[...],"next"?}` in key order. The page ends when it holds `limit` documents, reaches the
   * byte bound, or has examined maxScanRows rows (tombstones and documents the filters reject
   * included): then `next` is the last key it consumed, and the page may be short, even empty.
   */
  query(tenant: string, request: QueryRequest): string {
    const range = prefixRange(request.prefix);
    const params: (string | number)[] = [];
    const filters = request.where.map((filter) => filterSql(filter, params));
    const match = ["value IS NOT NULL", ...filters].join(" AND ");
    const clauses = ["tenant = ?", "key >= ?", "key < ?"];
    params.push(tenant, range.low, range.high);
    if (request.after !== undefined) {
      clauses.push("key > ?");
      params.push(request.after);
    }
    params.push(this.bounds.maxScanRows);
    // A rejected row's value is not even read out: only the keys of what the filters skip reach here.
    const rows = this.db
      .prepare<(string | number)[], { key: string; version: number; value: string | null }>(
        `SELECT key, version, CASE WHEN ${match} THEN value END AS value FROM documents WHERE ${clauses.join(" AND ")} ORDER BY key LIMIT ?`,
      )
      .iterate(...params);
    const page = new JsonPage(this.bounds.maxPageBytes);
    let consumed: string | undefined;
    let scanned = 0;
    let stopped = false;
    for (const row of rows) {
      scanned++;
      if (row.value !== null) {
        if (!page.add(documentJson(row.key, { version: row.version, value: row.value }))) {
          stopped = true;
          break;
        }
        if (page.count === request.limit) {
          consumed = row.key;
          stopped = true;
          break;
        }
      }
      consumed = row.key;
    }
    const more = stopped || scanned === this.bounds.maxScanRows;
    const next = more && consumed !== undefined ? `,"next":${JSON.stringify(consumed)}` : "";
    return `{"items":${page.array()}${next}}`;
  }

  /**
   * `{"hits":[...],"next"?}`: the documents of the index's hits, in rank order, until the byte bound.
   * `next` is the last hit answered, as the cursor of the next page, when the bound cut the page or the
   * index gave all the hits it was asked for (`full`), so more may follow.
   */
  searchHits(tenant: string, hits: readonly IndexHit[], full: boolean): string {
    const page = new JsonPage(this.bounds.maxPageBytes);
    let last: IndexHit | undefined;
    let cut = false;
    for (const hit of hits) {
      const row = this.read.get(tenant, hit.key);
      // A document deleted since the index answered is skipped, as the index would now skip it.
      if (
        row !== undefined &&
        !page.add(documentJson(hit.key, row, `,"score":${JSON.stringify(hit.score)}`))
      ) {
        cut = true;
        break;
      }
      last = hit;
    }
    const next =
      (cut || full) && last !== undefined
        ? `,"next":${JSON.stringify({ score: last.score, key: last.key })}`
        : "";
    return `{"hits":${page.array()}${next}}`;
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
