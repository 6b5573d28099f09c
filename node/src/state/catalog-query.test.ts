import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PageBounds } from "../requests/read-limits.js";
import { CatalogQueries, parseQueryRequest } from "./catalog-query.js";
import { openDatabase } from "./database.js";
import type { BulkGetPage, QueryPage, SearchPage } from "./test-fixtures/read-pages.js";

let dir: string;
let db: Database.Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-catalog-query-"));
  db = openDatabase(join(dir, "state.db"));
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const UNBOUNDED: PageBounds = { maxScanRows: 1_000_000, maxTraverseEdges: 1_000_000, maxPageBytes: 1 << 30 };

/** Writes rows as the state machine leaves them; a null value is a tombstone. */
function store(rows: Record<string, unknown>, tenant = "t1"): void {
  const write = db.prepare(
    "INSERT INTO documents (tenant, key, version, value, updated_index) VALUES (?, ?, 1, ?, 1) ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, version = version + 1",
  );
  for (const [key, value] of Object.entries(rows)) {
    write.run(tenant, key, value === null ? null : JSON.stringify(value));
  }
}

const keyed = (keys: readonly string[], value: (key: string) => unknown) =>
  Object.fromEntries(keys.map((key) => [key, value(key)]));
const range = (n: number, prefix = "k") =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, "0")}`);

/** Every page of a query, following `next`. */
function pages(catalog: CatalogQueries, body: Record<string, unknown>): QueryPage[] {
  const all: QueryPage[] = [];
  let after: string | undefined;
  do {
    const page = JSON.parse(catalog.query("t1", parseQueryRequest({ ...body, after }))) as QueryPage;
    all.push(page);
    after = page.next;
  } while (after !== undefined && all.length < 100);
  return all;
}

describe("query pages", () => {
  it("stop after maxScanRows rows, tombstones included, with a cursor even when empty", () => {
    store(keyed(range(10), (key) => ({ hit: key === "k09" })));
    store({ k01: null, k02: null });
    const catalog = new CatalogQueries(db, { ...UNBOUNDED, maxScanRows: 4 });
    const found = pages(catalog, { where: [{ path: "$.hit", value: true }] });
    expect(found).toEqual([
      { items: [], next: "k03" },
      { items: [], next: "k07" },
      { items: [{ key: "k09", value: { hit: true }, version: 1 }] },
    ]);
  });

  it("stop at the byte bound and resume after the last document answered, each exactly once", () => {
    store(keyed(range(7), (key) => ({ key, pad: "x".repeat(60) })));
    const one = JSON.stringify({ key: "k00", value: { key: "k00", pad: "x".repeat(60) }, version: 1 }).length;
    const catalog = new CatalogQueries(db, { ...UNBOUNDED, maxPageBytes: 2 * (one + 1) + 10 });
    const found = pages(catalog, {});
    expect(found.map((page) => page.items.map((doc) => doc.key))).toEqual([
      ["k00", "k01"],
      ["k02", "k03"],
      ["k04", "k05"],
      ["k06"],
    ]);
    expect(found.map((page) => page.next)).toEqual(["k01", "k03", "k05", undefined]);
  });

  it("answer a document larger than the byte bound alone, then go on", () => {
    store({ a: "small", b: "y".repeat(500), c: "small" });
    const catalog = new CatalogQueries(db, { ...UNBOUNDED, maxPageBytes: 100 });
    expect(pages(catalog, {}).map((page) => page.items.map((doc) => doc.key))).toEqual([["a"], ["b"], ["c"]]);
  });

  it("page by limit as before, within the scan and byte bounds", () => {
    store(keyed(range(5), () => 1));
    const catalog = new CatalogQueries(db, UNBOUNDED);
    expect(pages(catalog, { limit: 2 }).map((page) => [page.items.length, page.next])).toEqual([
      [2, "k01"],
      [2, "k03"],
      [1, undefined],
    ]);
  });
});

describe("bulk-get pages", () => {
  it("answer keys in request order up to the byte bound and return the rest as remaining", () => {
    store({ a: "x".repeat(40), b: "x".repeat(40), c: "x".repeat(40) });
    // Each found item's JSON is 87 bytes, a missing one's 31.
    const catalog = new CatalogQueries(db, { ...UNBOUNDED, maxPageBytes: 250 });
    const keys = ["c", "missing", "a", "b", "a"];
    const first = JSON.parse(catalog.bulkGet("t1", keys)) as BulkGetPage;
    expect(first.items.map((item) => [item.key, item.found])).toEqual([
      ["c", true],
      ["missing", false],
      ["a", true],
    ]);
    expect(first.remaining).toEqual(["b", "a"]);
    const second = JSON.parse(catalog.bulkGet("t1", first.remaining!)) as BulkGetPage;
    expect(second.items.map((item) => item.key)).toEqual(["b", "a"]);
    expect(second.remaining).toBeUndefined();
    const whole = JSON.parse(new CatalogQueries(db, UNBOUNDED).bulkGet("t1", keys)) as BulkGetPage;
    expect([...first.items, ...second.items]).toEqual(whole.items);
  });

  it("answer a document larger than the byte bound alone", () => {
    store({ big: "z".repeat(500), small: 1 });
    const catalog = new CatalogQueries(db, { ...UNBOUNDED, maxPageBytes: 100 });
    const first = JSON.parse(catalog.bulkGet("t1", ["big", "small"])) as BulkGetPage;
    expect(first.items).toEqual([{ key: "big", value: "z".repeat(500), version: 1, found: true }]);
    expect(first.remaining).toEqual(["small"]);
  });
});

describe("search hit pages", () => {
  const hits = [
    { key: "a", score: -3 },
    { key: "gone", score: -2.5 },
    { key: "b", score: -2 },
    { key: "c", score: -1 },
  ];
  beforeEach(() => store({ a: "x".repeat(40), b: "x".repeat(40), c: "x".repeat(40) }));
  const page = (catalog: CatalogQueries, full: boolean) =>
    JSON.parse(catalog.searchHits("t1", hits, full)) as SearchPage;

  it("end at the byte bound with the last hit answered as the cursor", () => {
    // Each hit's JSON is 85 bytes.
    const cut = page(new CatalogQueries(db, { ...UNBOUNDED, maxPageBytes: 200 }), false);
    expect(cut.hits.map((hit) => [hit.key, hit.score])).toEqual([
      ["a", -3],
      ["b", -2],
    ]);
    expect(cut.next).toEqual({ score: -2, key: "b" });
  });

  it("give a cursor when the index gave as many hits as asked, and none at the end", () => {
    const catalog = new CatalogQueries(db, UNBOUNDED);
    expect(page(catalog, true).next).toEqual({ score: -1, key: "c" });
    expect(page(catalog, false).next).toBeUndefined();
    expect(page(catalog, false).hits.map((hit) => hit.key)).toEqual(["a", "b", "c"]);
  });
});
