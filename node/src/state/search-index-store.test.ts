import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SearchIndexStore } from "./search-index-store.js";
import type { IndexChange } from "./search-protocol.js";
import { matchExpression, tenantToken } from "./search-query.js";

let dir: string;
const open: SearchIndexStore[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-index-"));
});
afterEach(() => {
  for (const store of open.splice(0)) store.close();
  rmSync(dir, { recursive: true, force: true });
});

function store(name: string): SearchIndexStore {
  const opened = SearchIndexStore.open(join(dir, name));
  open.push(opened);
  return opened;
}

const A = tenantToken("tenant-a");
const B = tenantToken("tenant-b");
const put = (id: number, token: string, key: string, text: string): IndexChange => ({ id, token, key, text });
const search = (index: SearchIndexStore, token: string, query: string) =>
  index.query(token, matchExpression(token, query).expression, "", "\u{10FFFF}", 100, null);

/** The tenants' FTS5 tables in a file (FTS5's own tables beside each have longer names). */
function tenantTables(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => row.name)
      .filter((name) => /^fts_t[0-9a-f]{24}$/.test(name));
  } finally {
    db.close();
  }
}

describe("the search index store", () => {
  it("ranks a tenant by its own documents only", () => {
    const alone = store("alone");
    const shared = store("shared");
    const own = [put(1, A, "d1", "apple banana"), put(2, A, "d2", "apple cherry"), put(3, A, "d3", "cherry")];
    alone.applyChanges(own, 1);
    shared.applyChanges(
      [...own, ...Array.from({ length: 30 }, (_, i) => put(100 + i, B, `x${i}`, "apple apple apple"))],
      1,
    );
    expect(search(shared, A, "apple")).toEqual(search(alone, A, "apple"));
    expect(search(shared, B, "apple")).toHaveLength(30);
  });

  it("drops a tenant's table when its build starts over, and every tenant's at a reset", () => {
    const index = store("index");
    index.applyChanges([put(1, A, "a", "word"), put(2, B, "b", "word")], 2);
    expect(tenantTables(join(dir, "index"))).toEqual([`fts_${A}`, `fts_${B}`].sort());
    index.beginTenant("tenant-a", A);
    expect(search(index, A, "word")).toEqual([]);
    expect(search(index, B, "word")).toHaveLength(1);
    index.reset(5, ["tenant-b"]);
    expect(tenantTables(join(dir, "index"))).toEqual([]);
    expect(search(index, B, "word")).toEqual([]);
    expect(SearchIndexStore.readTenants(join(dir, "index"))).toEqual([
      { tenant: "tenant-b", complete: false },
    ]);
    expect(index.status()).toEqual({ indexedThrough: 5, complete: false });
  });

  it("refuses a token that is not one, before it reaches SQL", () => {
    const index = store("index");
    const bad = "t0; DROP TABLE meta";
    expect(() => index.applyChanges([put(1, bad, "k", "x")], null)).toThrow(
      expect.objectContaining({ reason: "SearchIndexUnavailable" }),
    );
    expect(() => index.query(bad, '"x"', "", "z", 1, null)).toThrow(
      expect.objectContaining({ reason: "SearchIndexUnavailable" }),
    );
    expect(index.status()).toEqual({ indexedThrough: 0, complete: true });
  });

  it("reopens its own layout as it was left", () => {
    const path = join(dir, "index");
    const first = SearchIndexStore.open(path);
    first.applyChanges([put(1, A, "a", "kept")], 7);
    first.endTenant("tenant-a");
    first.close();
    const again = store("index");
    expect(again.status()).toEqual({ indexedThrough: 7, complete: true });
    expect(search(again, A, "kept").map((hit) => hit.key)).toEqual(["a"]);
    expect(SearchIndexStore.readTenants(path)).toEqual([{ tenant: "tenant-a", complete: true }]);
  });

  it("starts over a file in the old single-table layout, marked for a rebuild", () => {
    const path = join(dir, "index");
    const old = new Database(path);
    old.exec(`
      CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_through INTEGER NOT NULL, complete INTEGER NOT NULL);
      INSERT INTO meta VALUES (1, 9, 1);
      CREATE VIRTUAL TABLE fts USING fts5(tenant, body, key UNINDEXED);
      CREATE TABLE tenants (tenant TEXT PRIMARY KEY, complete INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO tenants VALUES ('tenant-a', 1);
    `);
    old.prepare("INSERT INTO fts (rowid, tenant, body, key) VALUES (1, ?, 'stale', 'a')").run(A);
    old.close();
    expect(SearchIndexStore.readTenants(path)).toEqual([]);
    const index = store("index");
    expect(index.status()).toEqual({ indexedThrough: 0, complete: false });
    expect(search(index, A, "stale")).toEqual([]);
    const db = new Database(path, { readonly: true });
    const names = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master").all();
    db.close();
    expect(names.map((row) => row.name)).not.toContain("fts");
  });
});
