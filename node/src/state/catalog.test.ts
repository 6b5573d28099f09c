import { rmSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseBulkGetRequest, parseQueryRequest } from "./catalog-query.js";
import { parseTraverseRequest } from "./graph.js";
import { parseSearchRequest } from "./search-query.js";
import {
  type BulkGetPage,
  json,
  type QueryPage,
  type SearchPage,
  type Traversal,
} from "./test-fixtures/read-pages.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s"));
});
afterEach(() => temp.cleanup());

const put = (key: string, value: unknown, extra: Record<string, unknown> = {}, tenant = "t1") =>
  h.ok<{ key: string; version: number }>("catalog.put", { value, ...extra }, { params: { key }, tenant });

describe("documents", () => {
  it("puts, overwrites and gets with increasing versions, per tenant", () => {
    expect(put("users/1", { name: "Ada" })).toEqual({ key: "users/1", version: 1 });
    expect(put("users/1", { name: "Ada L." })).toEqual({ key: "users/1", version: 2 });
    put("users/1", "other tenant", {}, "t2");
    expect(h.sm.getDocument("t1", "users/1")).toEqual({
      key: "users/1",
      value: { name: "Ada L." },
      version: 2,
    });
    expect(h.sm.getDocument("t2", "users/1")).toEqual({ key: "users/1", value: "other tenant", version: 1 });
    expect(h.sm.getDocument("t3", "users/1")).toBeUndefined();
  });

  it("answers a get as JSON text with the stored value spliced in, the same document", () => {
    put('a "quoted" key', { n: 1e20, s: "x\ny", list: [1.5, null, true] });
    const text = h.sm.getDocumentJson("t1", 'a "quoted" key')?.text;
    expect(text).toBe(
      '{"key":"a \\"quoted\\" key","value":{"n":100000000000000000000,"s":"x\\ny","list":[1.5,null,true]},"version":1}',
    );
    expect(JSON.parse(text!)).toEqual(h.sm.getDocument("t1", 'a "quoted" key'));
    expect(h.sm.getDocumentJson("t2", 'a "quoted" key')).toBeUndefined();
  });

  it("checks expectedVersion on put and delete (0: must not exist)", () => {
    expect(put("k", 1, { expectedVersion: 0 })).toEqual({ key: "k", version: 1 });
    expect(h.fail("catalog.put", { value: 2, expectedVersion: 0 }, { params: { key: "k" } })).toMatchObject({
      code: "FailedPrecondition",
      reason: "VersionMismatch",
      message: "document k is at version 1, expected none",
    });
    expect(h.fail("catalog.put", { value: 2, expectedVersion: 2 }, { params: { key: "k" } })).toMatchObject({
      code: "FailedPrecondition",
    });
    expect(put("k", 2, { expectedVersion: 1 })).toEqual({ key: "k", version: 2 });
    expect(h.fail("catalog.delete", { expectedVersion: 1 }, { params: { key: "k" } })).toMatchObject({
      code: "FailedPrecondition",
    });
    expect(h.ok("catalog.delete", { expectedVersion: 2 }, { params: { key: "k" } })).toEqual({
      key: "k",
      version: 3,
    });
    expect(h.sm.getDocument("t1", "k")).toBeUndefined();
  });

  it("keeps counting versions across a delete, so an old expectedVersion never matches a new document", () => {
    put("k", "first");
    h.ok("catalog.delete", "", { params: { key: "k" } });
    expect(h.fail("catalog.delete", "", { params: { key: "k" } })).toMatchObject({
      code: "NotFound",
      reason: "DocumentNotFound",
    });
    expect(h.fail("catalog.put", { value: "x", expectedVersion: 1 }, { params: { key: "k" } })).toMatchObject(
      {
        code: "FailedPrecondition",
      },
    );
    expect(put("k", "second", { expectedVersion: 0 })).toEqual({ key: "k", version: 3 });
  });

  it("refuses bad bodies with InvalidArgument and changes nothing", () => {
    const bad: [unknown, string][] = [
      ["{oops", "MalformedJson"],
      ["[1,2]", "MalformedJson"],
      ["", "MalformedJson"],
      [{ notValue: 1 }, "InvalidBody"],
      [{ value: 1, expectedVersion: -1 }, "InvalidBody"],
      [{ value: 1, expectedVersion: "1" }, "InvalidBody"],
      [{ value: 1, expectedVersion: 1.5 }, "InvalidBody"],
      [{ value: JSON.parse(`${"[".repeat(70)}${"]".repeat(70)}`) }, "InvalidBody"],
      // Beyond a double's range: parsed as Infinity, it would have been stored as null.
      ['{"value":1e400}', "InvalidBody"],
      ['{"value":{"a":[1,-1e999]}}', "InvalidBody"],
    ];
    for (const [body, reason] of bad) {
      expect(h.fail("catalog.put", body, { params: { key: "k" } })).toMatchObject({
        code: "InvalidArgument",
        reason,
      });
    }
    expect(h.fail("catalog.delete", "{", { params: { key: "k" } })).toMatchObject({
      code: "InvalidArgument",
    });
    expect(h.fail("catalog.put", "null", { params: { key: "k" } })).toMatchObject({
      reason: "MalformedJson",
    });
    expect(h.sm.getDocument("t1", "k")).toBeUndefined();
    // An optional body may also be JSON null.
    put("k", 1);
    expect(h.ok("catalog.delete", "null", { params: { key: "k" } })).toEqual({ key: "k", version: 2 });
    // 64 levels is the deepest value accepted, and the largest double is a number like any other.
    put("deep", JSON.parse(`${"[".repeat(64)}${"]".repeat(64)}`));
    put("max", Number.MAX_VALUE);
    expect(h.sm.getDocument("t1", "max")?.value).toBe(Number.MAX_VALUE);
  });

  it("stores a value as JSON.stringify writes it, whatever the payload's spelling", async () => {
    // Long enough that every payload below with no backslash is written by the plain writer.
    const long = "é😀/".repeat(200);
    const payloads = [
      `{ "value" : { "b" : [ 1.0, -0, 1E+2 ], "2" : "${long}", "1" : null } }`,
      `{"value":"${long}"}`,
      `{"value":"${long}\\u0041\\n\\""}`,
      `{"value":{"text":"${long}","quoted":"say \\"hi\\"","tab":"\\t"}}`,
    ];
    for (const [i, payload] of payloads.entries()) {
      h.ok("catalog.put", payload, { params: { key: `k${i}` } });
      const page = await h.sm.bulkGet("t1", parseBulkGetRequest({ keys: [`k${i}`] }));
      const stored = JSON.stringify((JSON.parse(payload) as { value: unknown }).value);
      expect(page.text).toContain(`"value":${stored},"version":1`);
    }
  });

  it("gets many keys at once, in request order", async () => {
    put("a", 1);
    put("c", 3);
    expect(
      (await json<BulkGetPage>(h.sm.bulkGet("t1", parseBulkGetRequest({ keys: ["c", "b", "a", "c"] }))))
        .items,
    ).toEqual([
      { key: "c", value: 3, version: 1, found: true },
      { key: "b", found: false },
      { key: "a", value: 1, version: 1, found: true },
      { key: "c", value: 3, version: 1, found: true },
    ]);
    expect(() => parseBulkGetRequest({ keys: "a" })).toThrow(/array/);
    expect(() => parseBulkGetRequest({ keys: [1] })).toThrow(/string/);
    expect(() => parseBulkGetRequest({ keys: Array(1001).fill("k") })).toThrow(/at most 1000/);
    expect(() => parseBulkGetRequest({})).toThrow(/required/);
  });
});

describe("catalog query", () => {
  beforeEach(() => {
    put("orders/1", { status: "open", total: 10, paid: false, customer: { id: "c1" }, tags: ["x"] });
    put("orders/2", { status: "closed", total: 25.5, paid: true, customer: { id: "c2" }, note: null });
    put("orders/3", { status: "open", total: 40, paid: true, customer: { id: "c1" } });
    put("orders/10", { status: 1 });
    put("ordersX", { status: "open" });
    put("users/1", { status: "open" });
    put("orders/9", { status: "open" }, {}, "t2");
  });
  const query = (body: unknown) => json<QueryPage>(h.sm.query("t1", parseQueryRequest(body)));
  const keys = async (body: unknown) => (await query(body)).items.map((d) => d.key);

  it("filters by key prefix in key order, within the tenant", async () => {
    expect(await keys({ prefix: "orders/" })).toEqual(["orders/1", "orders/10", "orders/2", "orders/3"]);
    expect(await keys({})).toHaveLength(6);
    expect(await keys({ prefix: "nothing" })).toEqual([]);
  });

  it("filters on JSON paths by type-aware equality and comparison", async () => {
    expect(await keys({ prefix: "orders/", where: [{ path: "$.status", value: "open" }] })).toEqual([
      "orders/1",
      "orders/3",
    ]);
    expect(await keys({ where: [{ path: "$.status", op: "eq", value: 1 }] })).toEqual(["orders/10"]);
    expect(await keys({ where: [{ path: "$.paid", value: true }] })).toEqual(["orders/2", "orders/3"]);
    expect(await keys({ where: [{ path: "$.paid", value: false }] })).toEqual(["orders/1"]);
    expect(await keys({ where: [{ path: "$.note", value: null }] })).toEqual(["orders/2"]);
    expect(
      await keys({
        where: [
          { path: "$.customer.id", value: "c1" },
          { path: "$.total", op: "gt", value: 20 },
        ],
      }),
    ).toEqual(["orders/3"]);
    expect(await keys({ where: [{ path: "$.total", op: "lte", value: 25.5 }] })).toEqual([
      "orders/1",
      "orders/2",
    ]);
    expect(await keys({ where: [{ path: "$.status", op: "gte", value: "op" }] })).toEqual([
      "orders/1",
      "orders/3",
      "ordersX",
      "users/1",
    ]);
    expect(await keys({ prefix: "orders/", where: [{ path: "$.status", op: "ne", value: "open" }] })).toEqual(
      ["orders/10", "orders/2"],
    );
    expect(await keys({ where: [{ path: "$.tags[0]", value: "x" }] })).toEqual(["orders/1"]);
    expect(await keys({ where: [{ path: "$.note", op: "exists", value: true }] })).toEqual(["orders/2"]);
    expect(
      await keys({ prefix: "orders/", where: [{ path: "$.customer", op: "exists", value: false }] }),
    ).toEqual(["orders/10"]);
  });

  it("pages with limit and after", async () => {
    const first = await query({ prefix: "orders/", limit: 3 });
    expect(first.items.map((d) => d.key)).toEqual(["orders/1", "orders/10", "orders/2"]);
    expect(first.next).toBe("orders/2");
    const second = await query({ prefix: "orders/", limit: 3, after: first.next });
    expect(second).toEqual({ items: [expect.objectContaining({ key: "orders/3", version: 1 })] });
  });

  it("refuses malformed queries", () => {
    const bad = [
      null,
      { where: {} },
      { where: [{ path: "status", value: 1 }] },
      { where: [{ path: "$.a b", value: 1 }] },
      // SQLite's path parser ends a quoted label at a NUL.
      { where: [{ path: '$."a\u0000b"', value: 1 }] },
      { where: [{ path: "$.a", op: "like", value: 1 }] },
      { where: [{ path: "$.a", value: { x: 1 } }] },
      { where: [{ path: "$.a", op: "lt", value: true }] },
      { where: [{ path: "$.a", op: "exists", value: 1 }] },
      { where: Array(17).fill({ path: "$.a", value: 1 }) },
      { limit: 0 },
      { limit: 1001 },
      { prefix: 5 },
    ];
    for (const body of bad)
      expect(() => parseQueryRequest(body), JSON.stringify(body)).toThrow(
        expect.objectContaining({ code: "InvalidArgument" }),
      );
  });
});

describe("full-text search", () => {
  const search = async (query: string, tenant = "t1", extra: Record<string, unknown> = {}) =>
    (await json<SearchPage>(h.sm.search(tenant, parseSearchRequest({ query, ...extra })))).hits.map(
      (hit) => hit.key,
    );

  it("finds documents by the words of their string values, per tenant", async () => {
    put("a", { title: "Quick brown fox", tags: ["forest", "animal"], count: 12 });
    put("b", { title: "Lazy dog", body: { text: "sleeps near the brown fence" } });
    put("c", "brown", {}, "t2");
    expect(await search("brown")).toEqual(expect.arrayContaining(["a", "b"]));
    expect(await search("brown")).toHaveLength(2);
    expect(await search("brown fox")).toEqual(["a"]);
    expect(await search("FOREST")).toEqual(["a"]);
    expect(await search("sle*")).toEqual(["b"]);
    expect(await search("title")).toEqual([]);
    expect(await search("12")).toEqual([]);
    expect(await search("brown", "t2")).toEqual(["c"]);
    expect(await search("brown", "t1", { prefix: "b" })).toEqual(["b"]);
    const [hit] = (await json<SearchPage>(h.sm.search("t1", parseSearchRequest({ query: "fox" })))).hits;
    expect(hit).toMatchObject({ key: "a", version: 1, value: { title: "Quick brown fox" } });
    expect(hit!.score).toBeLessThan(0);
  });

  it("follows updates and deletes, including rolled-back ones", async () => {
    put("a", "red apple");
    put("a", "green pear");
    put("b", "red cherry");
    h.ok("catalog.delete", "", { params: { key: "b" } });
    h.fail("transaction", {
      operations: [
        { op: "put", key: "c", value: "red grape" },
        { op: "check", key: "a", version: 9 },
      ],
    });
    expect(await search("red")).toEqual([]);
    expect(await search("pear")).toEqual(["a"]);
  });

  it("pages through hits in (score, key) order with after, each hit once", async () => {
    for (const [key, text] of [
      ["a", "tie tie"],
      ["b", "tie tie"],
      ["c", "tie"],
      ["d", "tie tie tie"],
      ["e", "tie other words"],
    ]) {
      put(key!, text);
    }
    const page = (extra: Record<string, unknown>) =>
      json<SearchPage>(h.sm.search("t1", parseSearchRequest({ query: "tie", ...extra })));
    const whole = await page({ limit: 10 });
    expect(whole.next).toBeUndefined();
    const paged: string[] = [];
    let after: SearchPage["next"];
    do {
      const next = await page({ limit: 2, after });
      paged.push(...next.hits.map((hit) => hit.key));
      after = next.next;
    } while (after !== undefined && paged.length < 20);
    expect(paged).toEqual(whole.hits.map((hit) => hit.key));
    expect(new Set(paged).size).toBe(5);
    for (const bad of [{ score: "1", key: "a" }, { score: 1 }, { key: "a" }, "a"]) {
      expect(() => parseSearchRequest({ query: "tie", after: bad })).toThrow(
        expect.objectContaining({ code: "InvalidArgument" }),
      );
    }
  });

  it("quotes user text, so query syntax is just words", async () => {
    put("a", 'says "NEAR" and OR AND not');
    expect(await search("NEAR(")).toEqual(["a"]);
    expect(await search('"near" or')).toEqual(["a"]);
    expect(() => parseSearchRequest({ query: "  !!! " })).toThrow(
      expect.objectContaining({ reason: "InvalidQuery" }),
    );
    expect(() => parseSearchRequest({ query: Array(33).fill("w").join(" ") })).toThrow(/32 words/);
    expect(() => parseSearchRequest({})).toThrow(/required/);
    expect(() => parseSearchRequest({ query: "x", limit: 0 })).toThrow(/limit/);
  });

  it("builds a tenant's index in chunks of its own keys, whatever other tenants hold", async () => {
    // More than a chunk (500 rows) of the tenant's, between other tenants' rows in row order.
    for (let i = 0; i < 1_100; i++) {
      const key = `k${String(i).padStart(4, "0")}`;
      put(key, i % 2 === 0 ? `needle ${i}` : `hay ${i}`);
      put(key, `needle of another tenant ${i}`, {}, "t2");
    }
    const keys: string[] = [];
    let after: SearchPage["next"];
    do {
      const page = await json<SearchPage>(
        h.sm.search("t1", parseSearchRequest({ query: "needle", limit: 100, after })),
      );
      keys.push(...page.hits.map((hit) => hit.key));
      after = page.next;
    } while (after !== undefined && keys.length < 2_000);
    expect(new Set(keys).size).toBe(550);
    expect(keys.every((key) => Number(key.slice(1)) % 2 === 0)).toBe(true);
  });

  it("answers Unavailable when this voter's search index has failed, so a client asks another", async () => {
    put("a", "words");
    expect(await search("words")).toEqual(["a"]);
    const indexer = Reflect.get(h.sm, "indexer") as object;
    await (Reflect.get(indexer, "worker") as { terminate(): Promise<number> }).terminate();
    await expect(h.sm.search("t1", parseSearchRequest({ query: "words" }))).rejects.toMatchObject({
      code: "Unavailable",
      reason: "SearchIndexUnavailable",
    });
  });

  it("reuses its index across a clean restart and rebuilds a missing one", async () => {
    put("a", "persistent words");
    await h.sm.close();
    const reopened = temp.create("s");
    const persistent = await json<SearchPage>(
      reopened.search("t1", parseSearchRequest({ query: "persistent" })),
    );
    expect(persistent.hits.map((x) => x.key)).toEqual(["a"]);
    await reopened.close();
    for (const suffix of ["", "-wal", "-shm"])
      rmSync(`${temp.path("s.db.search")}${suffix}`, { force: true });
    const rebuilt = temp.create("s");
    const words = await json<SearchPage>(rebuilt.search("t1", parseSearchRequest({ query: "words" })));
    expect(words.hits.map((x) => x.key)).toEqual(["a"]);
  });
});

describe("graph", () => {
  const edge = (from: string, type: string, to: string) => ({ from, type, to });

  it("puts edges idempotently and deletes them", () => {
    expect(h.ok("graph.putEdge", edge("a", "knows", "b"))).toEqual({
      ...edge("a", "knows", "b"),
      created: true,
    });
    expect(h.ok("graph.putEdge", edge("a", "knows", "b"))).toEqual({
      ...edge("a", "knows", "b"),
      created: false,
    });
    expect(h.ok("graph.deleteEdge", edge("a", "knows", "b"))).toEqual(edge("a", "knows", "b"));
    expect(h.fail("graph.deleteEdge", edge("a", "knows", "b"))).toMatchObject({
      code: "NotFound",
      reason: "EdgeNotFound",
    });
    for (const bad of [
      { from: "a", type: "t" },
      { from: "", type: "t", to: "b" },
      { from: "a", type: "x".repeat(129), to: "b" },
      "[]",
    ]) {
      expect(h.fail("graph.putEdge", bad)).toMatchObject({ code: "InvalidArgument" });
    }
  });

  it("traverses breadth-first with depth, direction, type and result limits", async () => {
    for (const [from, type, to] of [
      ["a", "knows", "b"],
      ["a", "owns", "c"],
      ["b", "knows", "d"],
      ["c", "knows", "d"],
      ["d", "knows", "e"],
      ["x", "knows", "a"],
      ["a", "knows", "a"],
    ] as const) {
      h.ok("graph.putEdge", edge(from, type, to));
    }
    h.ok("graph.putEdge", edge("a", "knows", "z"), { tenant: "t2" });
    const traverse = (body: Record<string, unknown>) =>
      json<Traversal>(h.sm.traverse("t1", parseTraverseRequest({ start: "a", ...body })));
    const ids = async (body: Record<string, unknown>) =>
      (await traverse(body)).nodes.map((n) => `${n.id}@${n.depth}`);
    expect(await ids({ maxDepth: 1 })).toEqual(["a@0", "b@1", "c@1"]);
    expect(await ids({ maxDepth: 3 })).toEqual(["a@0", "b@1", "c@1", "d@2", "e@3"]);
    expect(await ids({ maxDepth: 3, types: ["knows"] })).toEqual(["a@0", "b@1", "d@2", "e@3"]);
    expect(await ids({ direction: "in" })).toEqual(["a@0", "x@1"]);
    expect(await ids({ direction: "both", maxDepth: 1 })).toEqual(["a@0", "b@1", "c@1", "x@1"]);
    const truncated = await traverse({ maxDepth: 5, limit: 3 });
    expect(truncated).toMatchObject({
      truncated: true,
      nodes: [{ id: "a", via: null }, { id: "b" }, { id: "c" }],
    });
    expect(truncated.nodes[2]!.via).toEqual(edge("a", "owns", "c"));
    expect(await traverse({ start: "nowhere" })).toEqual({
      nodes: [{ id: "nowhere", depth: 0, via: null }],
      truncated: false,
    });
    for (const bad of [
      {},
      { start: "a", direction: "up" },
      { start: "a", maxDepth: 0 },
      { start: "a", maxDepth: 17 },
      { start: "a", types: [1] },
    ]) {
      expect(() => parseTraverseRequest(bad)).toThrow(expect.objectContaining({ code: "InvalidArgument" }));
    }
  });
});
