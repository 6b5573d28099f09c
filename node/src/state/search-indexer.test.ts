import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseSearchRequest, tenantToken } from "./search-query.js";
import type { StateMachine } from "./state-machine.js";
import { json, type SearchPage } from "./test-fixtures/read-pages.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s"));
});
afterEach(() => temp.cleanup());

const put = (key: string, value: unknown, tenant = "t1") =>
  h.ok("catalog.put", { value }, { params: { key }, tenant });
const search = async (query: string, tenant = "t1", sm: StateMachine = h.sm) =>
  (await json<SearchPage>(sm.search(tenant, parseSearchRequest({ query, limit: 100 })))).hits
    .map((hit) => hit.key)
    .sort();

/** What the index file holds, read beside the worker (WAL lets a reader in while it writes). */
function indexFile(): { rows: number; tenants: { tenant: string; complete: number }[] } {
  const db = new Database(temp.path("s.db.search"), { readonly: true });
  try {
    // One FTS5 table per tenant (`fts_<token>`; FTS5's own tables beside it have longer names).
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'fts_t*'").all() as {
        name: string;
      }[]
    ).filter(({ name }) => /^fts_t[0-9a-f]{24}$/.test(name));
    let rows = 0;
    for (const { name } of tables)
      rows += (db.prepare(`SELECT count(*) AS n FROM ${name}`).get() as { n: number }).n;
    const tenants = db.prepare("SELECT tenant, complete FROM tenants ORDER BY tenant").all() as {
      tenant: string;
      complete: number;
    }[];
    return { rows, tenants };
  } finally {
    db.close();
  }
}

/**
 * Waits until the worker has written what the applies and searches before this call sent it, by a
 * search of `tenant` (which that tenant's first search also follows).
 */
async function settled(sm: StateMachine = h.sm, tenant = "t1"): Promise<void> {
  await sm.search(tenant, parseSearchRequest({ query: "settle" }));
}

describe("the search index follows only tenants that search", () => {
  it("indexes nothing for a tenant until its first search, which finds what it wrote before", async () => {
    put("a", "early words");
    put("b", "early and late", "t2");
    await h.sm.search("t3", parseSearchRequest({ query: "anything" }));
    expect(indexFile()).toEqual({ rows: 0, tenants: [{ tenant: "t3", complete: 1 }] });

    expect(await search("early")).toEqual(["a"]);
    put("c", "late words");
    h.ok("catalog.delete", "", { params: { key: "a" } });
    expect(await search("words")).toEqual(["c"]);
    await settled();
    // t2 wrote all along and never searched: none of its documents reached the index.
    expect(indexFile()).toEqual({
      rows: 1,
      tenants: [
        { tenant: "t1", complete: 1 },
        { tenant: "t3", complete: 1 },
      ],
    });
    expect(await search("early", "t2")).toEqual(["b"]);
    expect(indexFile().rows).toBe(2);
  });

  it("refuses a too-deep value alike whether or not the tenant is followed", async () => {
    let deep: unknown = "x";
    for (let i = 0; i < 70; i++) deep = [deep];
    await search("x", "t2");
    for (const tenant of ["t1", "t2"]) {
      expect(h.fail("catalog.put", { value: deep }, { params: { key: "k" }, tenant })).toMatchObject({
        code: "InvalidArgument",
      });
    }
  });

  it("keeps following its tenants across a restart", async () => {
    put("a", "kept words");
    expect(await search("kept")).toEqual(["a"]);
    await h.sm.close();
    const reopened = temp.create("s");
    reopened.apply(
      h.log.command("catalog.put", { value: "kept after the restart" }, { params: { key: "b" } }),
    );
    // Settled by another tenant's search, so t1's new document is there only if t1 was still followed.
    await settled(reopened, "probe");
    expect(indexFile().rows).toBe(2);
    expect(await search("kept", "t1", reopened)).toEqual(["a", "b"]);
    await reopened.close();
  });

  it("sends the worker nothing for batches that change nothing it indexes, yet closes indexed through the last", async () => {
    put("a", "followed words");
    expect(await search("followed")).toEqual(["a"]);
    const worker = (h.sm as unknown as { indexer: { worker: { postMessage: (m: unknown) => void } } }).indexer
      .worker;
    const sent: unknown[] = [];
    const postMessage = worker.postMessage.bind(worker);
    worker.postMessage = (m) => {
      sent.push(m);
      postMessage(m);
    };
    for (let i = 0; i < 5; i++) put(`k${i}`, "not followed", "t2");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sent).toEqual([]);
    const applied = h.sm.applied().index;
    await h.sm.close();
    const db = new Database(temp.path("s.db.search"), { readonly: true });
    const meta = db.prepare("SELECT indexed_through AS through FROM meta").get() as { through: number };
    db.close();
    expect(meta.through).toBe(applied);
  });

  it("builds a tenant again at start when a crash cut its first build short", async () => {
    put("a", "half built");
    put("b", "half built too");
    expect(await search("built")).toEqual(["a", "b"]);
    await h.sm.close();
    // What a crash between the build's start and its end leaves: the tenant recorded, unfinished,
    // with only part of its documents indexed.
    const db = new Database(temp.path("s.db.search"));
    const fts = `fts_${tenantToken("t1")}`;
    db.exec(
      `UPDATE tenants SET complete = 0; DELETE FROM ${fts} WHERE rowid = (SELECT max(rowid) FROM ${fts})`,
    );
    db.close();
    const reopened = temp.create("s");
    expect(await search("built", "t1", reopened)).toEqual(["a", "b"]);
    await settled(reopened);
    expect(indexFile().tenants).toEqual([{ tenant: "t1", complete: 1 }]);
    await reopened.close();
  });
});
