import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "./database.js";
import { SCHEMA_VERSION } from "./schema.js";

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("openDatabase", () => {
  it("refuses a database of another schema with a typed error, whatever its meta row holds", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-schema-"));
    const path = join(dir, "state.db");
    // An earlier schema: fewer columns in its meta row than this one reads.
    const old = new Database(path);
    old.exec(
      "CREATE TABLE meta (id INTEGER PRIMARY KEY, schema_version INTEGER NOT NULL, applied_index INTEGER NOT NULL, applied_term INTEGER NOT NULL, clock_ms INTEGER NOT NULL)",
    );
    old.prepare("INSERT INTO meta VALUES (1, ?, 7, 1, 0)").run(SCHEMA_VERSION - 1);
    old.close();
    let refusal: unknown;
    try {
      openDatabase(path);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(InternalError);
    expect(refusal).toMatchObject({ reason: "UnsupportedStateSchema" });
    expect(String((refusal as Error).message)).toMatch(
      new RegExp(`state schema ${SCHEMA_VERSION - 1}, this voter reads ${SCHEMA_VERSION}`),
    );
  });
});
