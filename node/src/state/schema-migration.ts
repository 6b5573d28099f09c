import type Database from "better-sqlite3";
import type { ApiKeyHasher } from "./api-key-hasher.js";
import { SCHEMA_VERSION, TOMBSTONE_INDEX, V3_DDL, V6_DDL } from "./schema.js";

/** The oldest version a database may hold and still be migrated in place when it opens. */
export const OLDEST_MIGRATABLE_SCHEMA = 2;

/** Version 5 was a layout of outcomes given up before any release: nothing here reads or migrates it. */
const ABANDONED_SCHEMAS: ReadonlySet<number> = new Set([5]);

/** Whether a database of schema `version` is migrated to the current one when it opens. */
export function isMigratable(version: number): boolean {
  return version >= OLDEST_MIGRATABLE_SCHEMA && version < SCHEMA_VERSION && !ABANDONED_SCHEMAS.has(version);
}

/**
 * Brings a database of schema `from` to the current one, step by step, in one transaction, so a crash
 * leaves either version. Every voter migrates its own file at whatever index it had applied, so no
 * step reads anything but the rows it converts.
 */
export function migrateSchema(db: Database.Database, from: number, keyHasher: ApiKeyHasher): void {
  db.transaction(() => {
    if (from <= 2) toVersion3(db);
    if (from <= 3) toVersion4(db, keyHasher);
    // The table alone: the limits are kept when the state machine opens it (CanonicalLimitsStore).
    if (from <= 4) db.exec(V6_DDL);
    db.prepare("UPDATE meta SET schema_version = ? WHERE id = 1").run(SCHEMA_VERSION);
  })();
}

/**
 * Retention's tables and columns. A tombstone of unknown age counts as deleted at time 0, old enough for
 * the next applies to purge it (raising the tenant's version floor, so conditional writes still behave).
 */
function toVersion3(db: Database.Database): void {
  db.exec(V3_DDL);
  db.exec("ALTER TABLE documents ADD COLUMN deleted_ms INTEGER");
  db.exec("UPDATE documents SET deleted_ms = 0 WHERE value IS NULL");
  db.exec(TOMBSTONE_INDEX);
}

/** API key hashes keyed from the cluster secret: each stored plain SHA-256 becomes its keyed hash. */
function toVersion4(db: Database.Database, keyHasher: ApiKeyHasher): void {
  const rows = db
    .prepare<[], { key_id: string; key_hash: string }>("SELECT key_id, key_hash FROM api_keys")
    .all();
  const update = db.prepare<[string, string]>("UPDATE api_keys SET key_hash = ? WHERE key_id = ?");
  for (const row of rows) update.run(keyHasher.rekey(row.key_hash), row.key_id);
}
