import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseBulkGetRequest, parseQueryRequest } from "./catalog-query.js";
import { parseTraverseRequest } from "./graph.js";
import { type BulkGetPage, json, type QueryPage, type Traversal } from "./test-fixtures/read-pages.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s"));
});
afterEach(() => temp.cleanup());

const put = (key: string, value: unknown) => h.ok("catalog.put", { value }, { params: { key } });
const queryKeys = async () =>
  (await json<QueryPage>(h.sm.query("t1", parseQueryRequest({})))).items.map((doc) => doc.key);

describe("reads on the read worker", () => {
  it("see a write applied just before, though its commit group is still open", async () => {
    put("a", 1);
    expect(h.sm.savedIndex()).toBeLessThan(h.sm.applied().index);
    expect(await queryKeys()).toEqual(["a"]);
    for (const key of ["b", "c"]) {
      put(key, 1);
      h.ok("graph.putEdge", { from: "a", type: "links", to: key });
      expect(h.sm.savedIndex()).toBeLessThan(h.sm.applied().index);
      const bulk = await json<BulkGetPage>(h.sm.bulkGet("t1", parseBulkGetRequest({ keys: [key] })));
      expect(bulk.items).toEqual([{ key, value: 1, version: 1, found: true }]);
      const traversal = await json<Traversal>(h.sm.traverse("t1", parseTraverseRequest({ start: "a" })));
      expect(traversal.nodes.map((node) => node.id).at(-1)).toBe(key);
    }
    expect(await queryKeys()).toEqual(["a", "b", "c"]);
  });

  it("see the state a snapshot installed, not the file it replaced", async () => {
    const source = new Harness(temp.create("source"));
    source.ok("catalog.put", { value: "from the snapshot" }, { params: { key: "snap" } });
    await source.sm.createSnapshot(temp.path("snap.db"));
    put("local", 1);
    expect(await queryKeys()).toEqual(["local"]);
    h.sm.restoreFromSnapshot(temp.path("snap.db"));
    expect(await queryKeys()).toEqual(["snap"]);
    put("after", 2);
    expect(await queryKeys()).toEqual(["after", "snap"]);
  });
});
