import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import { applySqliteLimits, DEFAULT_STORAGE_LIMITS, type SqliteLimits } from "../fs/sqlite-limits.js";
import type { ApiKeyHasher } from "./api-key-hasher.js";
import { createSchema, isEmptyDatabase, SCHEMA_VERSION } from "./schema.js";
import { isMigratable, migrateSchema } from "./schema-migration.js";

export interface AppliedPosition {
  /** The last applied entry's index (0 before any). */
  readonly index: number;
  readonly term: number;
}

export interface MetaRow {
  schema_version: number;
  applied_index: number;
  applied_term: number;
  clock_ms: number;
  clock_term: number;
  clock_monotonic_ms: number;
}

/**
 * The page size of a new state database; one created with SQLite's default 4 KiB pages keeps them. A
 * document is a row, and a rewritten 64 KiB document with 4 KiB pages was a leaf cell and a chain of
 * sixteen overflow pages, each one more WAL frame (two writes) and one more copy at the checkpoint.
 * Small documents and index entries share a page, so larger pages cost them little
 * (docs/decisions/0033-state-pages-of-16-kib.md).
 */
export const STATE_PAGE_BYTES = 16 * 1024;

/**
 * Opens the state database, creating the schema when the file is new. The bootstrap admin is not
 * seeded here but created by a replicated command (see Principals.bootstrapAdmin), so that no voter's
 * own configuration can make its state differ from the others'.
 *
 * Durability: WAL with `synchronous = NORMAL`, so an apply does not fsync. A power loss may drop the last
 * applied transactions but never tears one (WAL commits are atomic), and each transaction carries the
 * applied index with the entries it applied, so the database reopens at an earlier index, consistently.
 * The Raft log holds every committed entry durably (it fsyncs before acknowledging) and replays from the
 * reopened applied index; entries at or below it are skipped, so replay is idempotent. The log is only
 * compacted behind a snapshot, and createSnapshot fsyncs the database and its WAL before it reports the
 * index the snapshot covers, so the entries the database could still lose are always in the log. Fsyncing
 * every apply would cost a disk flush per batch for nothing the log does not already guarantee.
 * `limits` bound the connection's page cache, its mapping and the size its WAL is cut back to.
 */
export function openDatabase(
  path: string,
  limits: SqliteLimits = DEFAULT_STORAGE_LIMITS.state,
  keyHasher?: ApiKeyHasher,
): Database.Database {
  const db = new Database(path);
  try {
    // Takes effect only while the file is new: before WAL mode writes its first page.
    db.pragma(`page_size = ${STATE_PAGE_BYTES}`);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    applySqliteLimits(db, limits);
    db.pragma("temp_store = MEMORY");
    // SQLite's autocheckpoint runs inside a commit and would hold the event loop for the page copies
    // and two fsyncs; the StateMachine checkpoints on a worker instead (StateWalCheckpoints).
    db.pragma("wal_autocheckpoint = 0");
    if (isEmptyDatabase(db)) {
      db.transaction(() => createSchema(db))();
    }
    // The version alone first: another schema's meta row may not have the columns readMeta reads.
    const stored = db
      .prepare<[], { schema_version: number }>("SELECT schema_version FROM meta WHERE id = 1")
      .get();
    const version = stored?.schema_version;
    if (version !== undefined && isMigratable(version)) {
      if (!keyHasher) throw new InternalError(`${path} holds state schema ${version} and needs migrating`);
      migrateSchema(db, version, keyHasher);
    } else if (version !== SCHEMA_VERSION) {
      throw new InternalError(
        `${path} holds state schema ${stored?.schema_version ?? "none"}, this voter reads ${SCHEMA_VERSION}: ` +
          "a data directory of another KeyLoad version; start this voter on an empty one",
        {
          reason: "UnsupportedStateSchema",
        },
      );
    }
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

export function readMeta(db: Database.Database): MetaRow {
  const row = db
    .prepare<[], MetaRow>(
      "SELECT schema_version, applied_index, applied_term, clock_ms, clock_term, clock_monotonic_ms FROM meta WHERE id = 1",
    )
    .get();
  if (row === undefined)
    throw new InternalError("the state database has no meta row", { reason: "CorruptState" });
  return row;
}
