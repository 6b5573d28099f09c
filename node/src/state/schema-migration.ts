import type Database from "better-sqlite3";
import { SCHEMA_VERSION, TOMBSTONE_INDEX, V3_DDL } from "./schema.js";

/** The version a database may hold and still be migrated in place when it opens. */
export const MIGRATABLE_SCHEMA_VERSION = SCHEMA_VERSION - 1;

/**
 * Brings a version-2 database to the current schema, in one transaction, so a crash leaves either
 * version. Every voter migrates its own file at whatever index it had applied, so the backfill reads
 * nothing but each row: a tombstone of unknown age counts as deleted at time 0, old enough for the next
 * applies to purge it (raising the tenant's version floor, so conditional writes still behave).
 */
export function migrateSchema(db: Database.Database): void {
  db.transaction(() => {
    db.exec(V3_DDL);
    db.exec("ALTER TABLE documents ADD COLUMN deleted_ms INTEGER");
    db.exec("UPDATE documents SET deleted_ms = 0 WHERE value IS NULL");
    db.exec(TOMBSTONE_INDEX);
    db.prepare("UPDATE meta SET schema_version = ? WHERE id = 1").run(SCHEMA_VERSION);
  })();
}
