import { rmSync } from "node:fs";
import Database from "better-sqlite3";
import {
  applySqliteLimits,
  checkpointBytesWithin,
  DEFAULT_STORAGE_LIMITS,
  type SqliteLimits,
  WAL_FRAME_BYTES,
} from "../fs/sqlite-limits.js";
import type { IndexChange, IndexHit } from "./search-protocol.js";

/** A new index is complete through index 0: it matches a new state database, which holds no documents. */
const DDL = `
CREATE TABLE IF NOT EXISTS meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  indexed_through INTEGER NOT NULL,
  complete INTEGER NOT NULL
);
INSERT OR IGNORE INTO meta (id, indexed_through, complete) VALUES (1, 0, 1);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(tenant, body, key UNINDEXED);
CREATE TABLE IF NOT EXISTS tenants (
  tenant TEXT PRIMARY KEY,
  complete INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** A tenant whose documents the index follows; `complete` once all of them had been sent to it. */
export interface IndexedTenant {
  readonly tenant: string;
  readonly complete: boolean;
}

/**
 * The full-text index, in its own database file, written only by the search worker. It is derived
 * state: not replicated, not in snapshots, rebuilt from the documents whenever it does not provably
 * match them, so it may lose writes in a crash (it fsyncs only at checkpoints).
 *
 * The FTS5 table keeps its own copy of the text: deleting a row then removes exactly its terms, so the
 * statistics BM25 ranks by are the same whether the index was built incrementally or rebuilt, and every
 * voter ranks one state's documents alike. (A contentless table can only mark rows deleted, leaving
 * their terms counted, so its ranking would drift with each voter's history.)
 *
 * It holds only the tenants that have searched (table `tenants`): indexing a document costs about as
 * much CPU as applying it, more for text of unique tokens, and a tenant that never searches should not
 * pay that on every write. A tenant's first search builds its part of the index from the documents.
 */
export class SearchIndexStore {
  private readonly insert: Database.Statement<[number, string, string, string]>;
  private readonly remove: Database.Statement<[number]>;
  private readonly setThrough: Database.Statement<[number]>;
  private readonly match: Database.Statement<[string, string, string, number], IndexHit>;
  private readonly matchAfter: Database.Statement<
    [string, string, string, number, number, string, number],
    IndexHit
  >;
  private readonly dropTenantRows: Database.Statement<[string]>;
  private readonly upsertTenant: Database.Statement<[string, number]>;
  readonly applyChanges: (changes: readonly IndexChange[], through: number | null) => void;

  private constructor(private readonly db: Database.Database) {
    this.insert = db.prepare("INSERT INTO fts (rowid, tenant, body, key) VALUES (?, ?, ?, ?)");
    this.remove = db.prepare("DELETE FROM fts WHERE rowid = ?");
    this.setThrough = db.prepare("UPDATE meta SET indexed_through = ? WHERE id = 1");
    this.match = db.prepare(
      `SELECT key, rank AS score FROM fts WHERE fts MATCH ? AND key >= ? AND key < ? ORDER BY rank, key LIMIT ?`,
    );
    this.matchAfter = db.prepare(
      `SELECT key, rank AS score FROM fts WHERE fts MATCH ? AND key >= ? AND key < ? AND (rank > ? OR (rank = ? AND key > ?)) ORDER BY rank, key LIMIT ?`,
    );
    this.dropTenantRows = db.prepare(
      "DELETE FROM fts WHERE rowid IN (SELECT rowid FROM fts WHERE fts MATCH 'tenant : ' || ?)",
    );
    this.upsertTenant = db.prepare(
      "INSERT INTO tenants (tenant, complete) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET complete = excluded.complete",
    );
    this.applyChanges = db.transaction((changes: readonly IndexChange[], through: number | null) => {
      for (const change of changes) {
        // A rebuild may send a document the batches already sent, so every change replaces the row.
        this.remove.run(change.id);
        if ("text" in change) this.insert.run(change.id, change.token, change.text, change.key);
      }
      if (through !== null) this.setThrough.run(through);
    });
  }

  /**
   * The tenants an index file follows, read before its worker opens it, so that applies forward their
   * changes from the first one on; none when the file is missing or unreadable (the worker then starts
   * an empty index, and nothing claims to follow a tenant it does not hold).
   */
  static readTenants(path: string): IndexedTenant[] {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { readonly: true, fileMustExist: true });
      return db
        .prepare<[], { tenant: string; complete: number }>(
          "SELECT tenant, complete FROM tenants ORDER BY tenant",
        )
        .all()
        .map((row) => ({ tenant: row.tenant, complete: row.complete === 1 }));
    } catch {
      return [];
    } finally {
      db?.close();
    }
  }

  /** Opens the index, starting over from an empty one when the file cannot be read. */
  static open(path: string, limits: SqliteLimits = DEFAULT_STORAGE_LIMITS.search): SearchIndexStore {
    try {
      return new SearchIndexStore(openIndex(path, limits));
    } catch {
      for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
      return new SearchIndexStore(openIndex(path, limits));
    }
  }

  status(): { indexedThrough: number; complete: boolean } {
    const row = this.db
      .prepare<[], { indexed_through: number; complete: number }>(
        "SELECT indexed_through, complete FROM meta WHERE id = 1",
      )
      .get()!;
    return { indexedThrough: row.indexed_through, complete: row.complete === 1 };
  }

  reset(through: number, tenants: readonly string[]): void {
    this.db.transaction(() => {
      this.db.exec("DELETE FROM fts; DELETE FROM tenants");
      for (const tenant of tenants) this.upsertTenant.run(tenant, 0);
      this.db.prepare("UPDATE meta SET indexed_through = ?, complete = 0 WHERE id = 1").run(through);
    })();
  }

  /** The rebuild after `reset` is done: the index and every tenant it was given are whole. */
  markComplete(): void {
    this.db.exec("UPDATE meta SET complete = 1 WHERE id = 1; UPDATE tenants SET complete = 1");
  }

  /** `token` is the tenant's token in the `tenant` column (see tenantToken). */
  beginTenant(tenant: string, token: string): void {
    this.db.transaction(() => {
      this.dropTenantRows.run(token);
      this.upsertTenant.run(tenant, 0);
    })();
  }

  endTenant(tenant: string): void {
    this.upsertTenant.run(tenant, 1);
  }

  /** Marks the index for a rebuild at the next start (after a failure left it unreliable). */
  markIncomplete(): void {
    this.db.exec("UPDATE meta SET complete = 0 WHERE id = 1");
  }

  /** Hits in (score, key) order; with `after`, only those ranked after it. */
  query(
    match: string,
    low: string,
    high: string,
    limit: number,
    after: { readonly score: number; readonly key: string } | null,
  ): IndexHit[] {
    if (after === null) return this.match.all(match, low, high, limit);
    return this.matchAfter.all(match, low, high, after.score, after.score, after.key, limit);
  }

  close(): void {
    this.db.close();
  }
}

/** WAL pages after which SQLite checkpoints the index, within half its WAL limit. */
const AUTOCHECKPOINT_PAGES = 10_000;

function openIndex(path: string, limits: SqliteLimits): Database.Database {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    applySqliteLimits(db, limits);
    const bytes = checkpointBytesWithin(limits.walLimitBytes, AUTOCHECKPOINT_PAGES * WAL_FRAME_BYTES);
    db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.floor(bytes / WAL_FRAME_BYTES))}`);
    db.exec(DDL);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
