import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PageBounds } from "../requests/read-limits.js";
import { openDatabase } from "./database.js";
import { parseTraverseRequest } from "./graph.js";
import { GraphTraversal } from "./graph-traversal.js";
import type { Traversal } from "./test-fixtures/read-pages.js";

let dir: string;
let db: Database.Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-traversal-"));
  db = openDatabase(join(dir, "state.db"));
  const edge = db.prepare(
    "INSERT INTO edges (tenant, from_id, type, to_id, entry_index) VALUES ('t1', ?, ?, ?, 1)",
  );
  // Ten edges of another type come before the one a typed traversal follows (neighbours go by type).
  for (let i = 0; i < 10; i++) edge.run("a", "blocks", `n${i}`);
  edge.run("a", "knows", "b");
  edge.run("b", "knows", "c");
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const UNBOUNDED: PageBounds = { maxScanRows: 1_000_000, maxTraverseEdges: 1_000_000, maxPageBytes: 1 << 30 };
const traverse = (bounds: PageBounds, body: Record<string, unknown>) =>
  JSON.parse(
    new GraphTraversal(db, bounds).traverse("t1", parseTraverseRequest({ start: "a", ...body })),
  ) as Traversal;
const ids = (traversal: Traversal) => traversal.nodes.map((node) => node.id);

describe("traversal bounds", () => {
  it("stops as truncated after maxTraverseEdges edges, those of other types included", () => {
    const knows = { types: ["knows"], maxDepth: 3 };
    expect(traverse(UNBOUNDED, knows)).toMatchObject({ truncated: false });
    expect(ids(traverse(UNBOUNDED, knows))).toEqual(["a", "b", "c"]);
    const cut = traverse({ ...UNBOUNDED, maxTraverseEdges: 10 }, knows);
    expect(cut).toEqual({ nodes: [{ id: "a", depth: 0, via: null }], truncated: true });
    expect(ids(traverse({ ...UNBOUNDED, maxTraverseEdges: 12 }, knows))).toEqual(["a", "b", "c"]);
  });

  it("stops as truncated at the byte bound", () => {
    const node = JSON.stringify({ id: "n0", depth: 1, via: { from: "a", type: "blocks", to: "n0" } });
    const cut = traverse({ ...UNBOUNDED, maxPageBytes: 60 + 3 * (node.length + 1) }, { maxDepth: 1 });
    expect(cut.truncated).toBe(true);
    expect(ids(cut)).toEqual(["a", "n0", "n1", "n2"]);
    expect(traverse(UNBOUNDED, { maxDepth: 1 }).nodes).toHaveLength(12);
  });
});
