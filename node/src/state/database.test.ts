import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { hashApiKey } from "./api-key.js";
import { openDatabase } from "./database.js";
import { SCHEMA_VERSION } from "./schema.js";
import { OLDEST_MIGRATABLE_SCHEMA } from "./schema-migration.js";
import { StateMachine } from "./state-machine.js";
import { SCHEMA_V2_DDL } from "./test-fixtures/schema-v2.js";
import { Harness, TEST_KEY_HASHER } from "./test-fixtures/state-fixtures.js";

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
    old.prepare("INSERT INTO meta VALUES (1, ?, 7, 1, 0)").run(OLDEST_MIGRATABLE_SCHEMA - 1);
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
      new RegExp(`state schema ${OLDEST_MIGRATABLE_SCHEMA - 1}, this voter reads ${SCHEMA_VERSION}`),
    );
  });

  it("refuses schema 5, a layout given up before any release, rather than migrate it", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-schema-"));
    const path = join(dir, "state.db");
    const old = new Database(path);
    old.exec(
      "CREATE TABLE meta (id INTEGER PRIMARY KEY, schema_version INTEGER NOT NULL, applied_index INTEGER NOT NULL, applied_term INTEGER NOT NULL, clock_ms INTEGER NOT NULL)",
    );
    old.prepare("INSERT INTO meta VALUES (1, 5, 7, 1, 0)").run();
    old.close();
    expect(() => openDatabase(path)).toThrow(/state schema 5, this voter reads 6/);
  });

  it("migrates a version-2 database in place: tombstones purged, versions grow, key hashes keyed", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-schema-"));
    const path = join(dir, "state.db");
    const old = new Database(path);
    old.exec(SCHEMA_V2_DDL);
    old.prepare("INSERT INTO meta VALUES (1, 2, 0, 0, 0, 0, 0)").run();
    old.prepare("INSERT INTO documents VALUES (1, 't1', 'gone', 5, NULL, 3)").run();
    old.prepare("INSERT INTO documents VALUES (2, 't1', 'live', 2, '\"v\"', 4)").run();
    // A key stored as earlier versions did: its plain SHA-256.
    old.prepare("INSERT INTO principals VALUES ('svc', 't1', '[\"reader\"]', 1)").run();
    old.prepare("INSERT INTO api_keys VALUES ('k1', 'svc', ?, 1)").run(hashApiKey("an old key"));
    old.close();

    const sm = StateMachine.open({ path, keyHasher: TEST_KEY_HASHER });
    try {
      const h = new Harness(sm);
      expect(sm.authenticate(TEST_KEY_HASHER.hash("an old key"))).toMatchObject({ keyId: "k1" });
      expect(sm.authenticate(hashApiKey("an old key"))).toBeUndefined();
      expect(sm.dump()).not.toContain(hashApiKey("an old key"));
      expect(sm.dump()).toMatch(/\[2,"t1","live",2,"\\"v\\"",4,null\]/);
      expect(sm.dump()).toMatch(/\[1,"t1","gone",5,null,3,0\]/);
      expect(h.ok("catalog.put", { value: 1 }, { params: { key: "x" } })).toMatchObject({ version: 1 });
      h.ok("catalog.delete", "", { params: { key: "x" } });
      // The delete purged the migrated tombstone: "gone" now starts above its last version.
      expect(sm.dump()).not.toMatch(/"gone"/);
      expect(h.ok("catalog.put", { value: 1 }, { params: { key: "gone" } })).toMatchObject({ version: 6 });
    } finally {
      await sm.close();
    }
    const reopened = new Database(path, { readonly: true });
    expect(reopened.prepare("SELECT schema_version FROM meta").get()).toEqual({
      schema_version: SCHEMA_VERSION,
    });
    reopened.close();
  });
});
