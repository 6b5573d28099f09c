import { rmSync } from "node:fs";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SearchIndexStore } from "./search-index-store.js";
import { parseSearchRequest, type SearchCursor, tenantToken } from "./search-query.js";
import type { StateMachine } from "./state-machine.js";
import { json, type SearchPage } from "./test-fixtures/read-pages.js";
import { committed, LogBuilder, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
beforeEach(() => {
  temp = new TempStates();
});
afterEach(() => temp.cleanup());

/** Voters applying one log: each command is applied by all of them. */
class Voters {
  readonly log = new LogBuilder();
  constructor(readonly sms: readonly StateMachine[]) {}

  put(key: string, value: unknown, tenant = "t1"): void {
    const entry = this.log.command("catalog.put", { value }, { params: { key }, tenant });
    for (const sm of this.sms) committed(sm.apply(entry));
  }

  delete(key: string, tenant = "t1"): void {
    const entry = this.log.command("catalog.delete", "", { params: { key }, tenant });
    for (const sm of this.sms) committed(sm.apply(entry));
  }
}

type Hit = { key: string; score: number };

async function page(
  sm: StateMachine,
  query: string,
  limit: number,
  after?: SearchCursor,
  tenant = "t1",
): Promise<{ hits: Hit[]; next: SearchCursor | undefined }> {
  const request = parseSearchRequest({ query, limit, ...(after === undefined ? {} : { after }) });
  const answer = await json<SearchPage>(sm.search(tenant, request));
  return { hits: answer.hits.map(({ key, score }) => ({ key, score })), next: answer.next };
}

/** Every hit, in one page. */
async function all(sm: StateMachine, query: string, tenant = "t1"): Promise<Hit[]> {
  return (await page(sm, query, 100, undefined, tenant)).hits;
}

describe("a tenant's search ranking depends on its own documents only", () => {
  it("scores alike, and continues a cursor, on voters that follow different other tenants", async () => {
    const a = temp.create("a");
    const b = temp.create("b");
    const voters = new Voters([a, b]);
    voters.put("d1", "apple banana");
    voters.put("d2", "apple cherry pie");
    voters.put("d3", "cherry");
    for (let i = 0; i < 30; i++) voters.put(`x${i}`, `apple apple apple ${i}`, "t2");
    // Only voter a has ever served a search of t2, so only its index follows t2.
    expect(await all(a, "apple", "t2")).toHaveLength(30);

    // A client pages with limit 1, asking voter a first and then voter b (it failed over).
    const first = await page(a, "apple", 1);
    const second = await page(b, "apple", 1, first.next);
    const third = second.next === undefined ? { hits: [] } : await page(b, "apple", 1, second.next);
    expect([...first.hits, ...second.hits, ...third.hits].map((hit) => hit.key)).toEqual(["d1", "d2"]);

    const onA = await all(a, "apple");
    expect(onA.map((hit) => hit.key)).toEqual(["d1", "d2"]);
    expect(onA).toEqual(await all(b, "apple"));
  });

  it("keeps the statistics exact through deletes and re-puts, as a build from the documents has them", async () => {
    const incremental = temp.create("incremental");
    const built = temp.create("built");
    const voters = new Voters([incremental, built]);
    voters.put("k0", "seed words");
    expect(await all(incremental, "seed")).toHaveLength(1);
    for (let i = 1; i <= 20; i++) voters.put(`k${i}`, `pear ${"plum ".repeat(i % 4)}word${i}`);
    for (let i = 1; i <= 20; i += 3) voters.delete(`k${i}`);
    for (let i = 2; i <= 20; i += 4) voters.put(`k${i}`, `pear again ${i}`);
    for (let i = 1; i <= 20; i += 6) voters.put(`k${i}`, "plum back");
    // Another tenant's documents come and go on the incremental voter's index only.
    expect(await all(incremental, "pear", "t2")).toEqual([]);
    for (let i = 0; i < 10; i++) voters.put(`p${i}`, "pear plum", "t2");
    for (let i = 0; i < 10; i += 2) voters.delete(`p${i}`, "t2");

    for (const query of ["pear", "plum", "pear plum", "again", "word1*"]) {
      const expected = await all(built, query);
      expect(expected.length).toBeGreaterThan(0);
      expect(await all(incremental, query)).toEqual(expected);
    }
  });

  it("starts over from an index file in the old single-table layout", async () => {
    const voters = new Voters([temp.create("s")]);
    voters.put("a", "real words");
    voters.put("b", "more real words");
    const applied = voters.sms[0]!.applied().index;
    await voters.sms[0]!.close();
    // The layout before per-tenant tables, claiming to be complete through the applied index, with a
    // row that no document holds: used as it is, a search would find it.
    const path = temp.path("s.db.search");
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    const old = new Database(path);
    old.exec(`
      CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_through INTEGER NOT NULL, complete INTEGER NOT NULL);
      CREATE VIRTUAL TABLE fts USING fts5(tenant, body, key UNINDEXED);
      CREATE TABLE tenants (tenant TEXT PRIMARY KEY, complete INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO tenants VALUES ('t1', 1);
    `);
    old.prepare("INSERT INTO meta VALUES (1, ?, 1)").run(applied);
    old
      .prepare("INSERT INTO fts (rowid, tenant, body, key) VALUES (1, ?, 'stale text', 'a')")
      .run(tenantToken("t1"));
    old.close();
    expect(SearchIndexStore.readTenants(path)).toEqual([]);

    const reopened = temp.create("s");
    expect(await all(reopened, "stale")).toEqual([]);
    expect((await all(reopened, "real")).map((hit) => hit.key).sort()).toEqual(["a", "b"]);
    const file = new Database(path, { readonly: true });
    const tables = file
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE name = 'fts'")
      .all();
    file.close();
    expect(tables).toEqual([]);
  });
});
