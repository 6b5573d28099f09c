import { rmSync } from "node:fs";
import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import {
  applySqliteLimits,
  checkpointBytesWithin,
  DEFAULT_STORAGE_LIMITS,
  type SqliteLimits,
  WAL_FRAME_BYTES,
} from "../fs/sqlite-limits.js";
import type { IndexChange, IndexHit } from "./search-protocol.js";

/**
 * The file's layout, in `user_version`. A file in any other (0: one `fts` table for every tenant, whose
 * BM25 statistics mixed the tenants) is started over, never read.
 */
const LAYOUT = 2;

/** A new index is complete through index 0: it matches a new state database, which holds no documents. */
const DDL = `
CREATE TABLE IF NOT EXISTS meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  indexed_through INTEGER NOT NULL,
  complete INTEGER NOT NULL
);
INSERT OR IGNORE INTO meta (id, indexed_through, complete) VALUES (1, 0, 1);
CREATE TABLE IF NOT EXISTS tenants (
  tenant TEXT PRIMARY KEY,
  complete INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** A tenant's token (see tenantToken): checked before it names a table in SQL text. */
const TOKEN = /^t[0-9a-f]{24}$/;
/** A tenant's FTS5 table, not one of the shadow tables FTS5 makes beside it (`<name>_data`, ...). */
const TABLE = /^fts_t[0-9a-f]{24}$/;
/** Tenants whose statements stay prepared; beyond that the least recently used are prepared again. */
const MAX_PREPARED_TENANTS = 1_000;

/** A tenant whose documents the index follows; `complete` once all of them had been sent to it. */
export interface IndexedTenant {
  readonly tenant: string;
  readonly complete: boolean;
}

/** One tenant's FTS5 table and its statements. */
interface TenantTable {
  readonly insert: Database.Statement<[number, string, string]>;
  readonly remove: Database.Statement<[number]>;
  readonly match: Database.Statement<[string, string, string, number], IndexHit>;
  readonly matchAfter: Database.Statement<[string, string, string, number, number, string, number], IndexHit>;
}

/**
 * The full-text index, in its own database file, written only by the search worker. It is derived
 * state: not replicated, not in snapshots, rebuilt from the documents whenever it does not provably
 * match them, so it may lose writes in a crash (it fsyncs only at checkpoints).
 *
 * Each tenant has its own FTS5 table, `fts_<token>`: BM25 ranks by statistics over the whole table
 * (document count, average length, how many documents hold each term), so in a shared table one
 * tenant's scores would move with the other tenants' documents, which tells a tenant about the others'
 * text, and with which tenants this voter happens to follow, which differs between voters (a search
 * cursor handed to another voter would then skip or repeat hits). A tenant's table is made by the first
 * change or query that needs it, dropped when its build starts over and at a reset.
 *
 * The FTS5 table keeps its own copy of the text: deleting a row then removes exactly its terms, so the
 * statistics BM25 ranks by are the same whether the index was built incrementally or rebuilt, and every
 * voter ranks one state's documents of a tenant alike. (A contentless table can only mark rows
 * deleted, leaving their terms counted, so its ranking would drift with each voter's history.)
 *
 * It holds only the tenants that have searched (table `tenants`): indexing a document costs about as
 * much CPU as applying it, more for text of unique tokens, and a tenant that never searches should not
 * pay that on every write. A tenant's first search builds its part of the index from the documents.
 */
export class SearchIndexStore {
  /** By token, least recently used first. */
  private readonly tables = new Map<string, TenantTable>();
  private readonly setThrough: Database.Statement<[number]>;
  private readonly upsertTenant: Database.Statement<[string, number]>;
  readonly applyChanges: (changes: readonly IndexChange[], through: number | null) => void;

  private constructor(private readonly db: Database.Database) {
    this.setThrough = db.prepare("UPDATE meta SET indexed_through = ? WHERE id = 1");
    this.upsertTenant = db.prepare(
      "INSERT INTO tenants (tenant, complete) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET complete = excluded.complete",
    );
    this.applyChanges = db.transaction((changes: readonly IndexChange[], through: number | null) => {
      let table: TenantTable | undefined;
      let token = "";
      for (const change of changes) {
        // Consecutive changes are mostly of one tenant: its table is looked up once for them.
        if (table === undefined || change.token !== token) {
          token = change.token;
          table = this.table(token);
        }
        // A rebuild may send a document the batches already sent, so every change replaces the row.
        table.remove.run(change.id);
        if ("text" in change) table.insert.run(change.id, change.text, change.key);
      }
      if (through !== null) this.setThrough.run(through);
    });
  }

  /**
   * The tenants an index file follows, read before its worker opens it, so that applies forward their
   * changes from the first one on; none when the file is missing, unreadable or in another layout (the
   * worker then starts an empty index, and nothing claims to follow a tenant it does not hold).
   */
  static readTenants(path: string): IndexedTenant[] {
    let db: Database.Database | undefined;
    try {
      db = new Database(path, { readonly: true, fileMustExist: true });
      if (db.pragma("user_version", { simple: true }) !== LAYOUT) return [];
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

  /**
   * Opens the index, starting over from an empty one when the file cannot be read or is in another
   * layout. One started over is marked incomplete: it may stand beside a state that holds documents,
   * so the indexer rebuilds it whatever index that state has applied.
   */
  static open(path: string, limits: SqliteLimits = DEFAULT_STORAGE_LIMITS.search): SearchIndexStore {
    let db: Database.Database | null;
    try {
      db = openIndex(path, limits);
    } catch {
      db = null;
    }
    if (db !== null) return new SearchIndexStore(db);
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    const store = new SearchIndexStore(openIndex(path, limits)!);
    store.markIncomplete();
    return store;
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
      const names = this.db
        .prepare<[], { name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'fts_t*' AND sql LIKE 'CREATE VIRTUAL TABLE%'",
        )
        .all()
        .map((row) => row.name)
        .filter((name) => TABLE.test(name));
      this.tables.clear();
      for (const name of names) this.db.exec(`DROP TABLE ${name}`);
      this.db.exec("DELETE FROM tenants");
      for (const tenant of tenants) this.upsertTenant.run(tenant, 0);
      this.db.prepare("UPDATE meta SET indexed_through = ?, complete = 0 WHERE id = 1").run(through);
    })();
  }

  /** The rebuild after `reset` is done: the index and every tenant it was given are whole. */
  markComplete(): void {
    this.db.exec("UPDATE meta SET complete = 1 WHERE id = 1; UPDATE tenants SET complete = 1");
  }

  /**
   * Drops what the index holds of `tenant`, whose token is `token` (see tenantToken), and records it
   * as being built. Dropping the table, not its rows, costs nothing per row and leaves no statistics.
   */
  beginTenant(tenant: string, token: string): void {
    const name = tableName(token);
    this.db.transaction(() => {
      this.tables.delete(token);
      this.db.exec(`DROP TABLE IF EXISTS ${name}`);
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

  /** Hits of the tenant whose token is `token`, in (score, key) order; with `after`, those ranked after it. */
  query(
    token: string,
    match: string,
    low: string,
    high: string,
    limit: number,
    after: { readonly score: number; readonly key: string } | null,
  ): IndexHit[] {
    const table = this.table(token);
    if (after === null) return table.match.all(match, low, high, limit);
    return table.matchAfter.all(match, low, high, after.score, after.score, after.key, limit);
  }

  close(): void {
    this.db.close();
  }

  /** The table of the tenant whose token is `token`, made if it is not there yet. */
  private table(token: string): TenantTable {
    const cached = this.tables.get(token);
    if (cached !== undefined) {
      this.tables.delete(token);
      this.tables.set(token, cached);
      return cached;
    }
    const name = tableName(token);
    this.db.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS ${name} USING fts5(body, key UNINDEXED)`);
    const table: TenantTable = {
      insert: this.db.prepare(`INSERT INTO ${name} (rowid, body, key) VALUES (?, ?, ?)`),
      remove: this.db.prepare(`DELETE FROM ${name} WHERE rowid = ?`),
      match: this.db.prepare(
        `SELECT key, rank AS score FROM ${name} WHERE ${name} MATCH ? AND key >= ? AND key < ? ORDER BY rank, key LIMIT ?`,
      ),
      matchAfter: this.db.prepare(
        `SELECT key, rank AS score FROM ${name} WHERE ${name} MATCH ? AND key >= ? AND key < ? AND (rank > ? OR (rank = ? AND key > ?)) ORDER BY rank, key LIMIT ?`,
      ),
    };
    if (this.tables.size >= MAX_PREPARED_TENANTS) this.tables.delete(this.tables.keys().next().value!);
    this.tables.set(token, table);
    return table;
  }
}

function tableName(token: string): string {
  if (!TOKEN.test(token)) {
    throw new InternalError(`not a tenant token: ${JSON.stringify(token)}`, {
      reason: "SearchIndexUnavailable",
    });
  }
  return `fts_${token}`;
}

/** WAL pages after which SQLite checkpoints the index, within half its WAL limit. */
const AUTOCHECKPOINT_PAGES = 10_000;

/** The index database, or null when the file holds another layout's tables. */
function openIndex(path: string, limits: SqliteLimits): Database.Database | null {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    applySqliteLimits(db, limits);
    const bytes = checkpointBytesWithin(limits.walLimitBytes, AUTOCHECKPOINT_PAGES * WAL_FRAME_BYTES);
    db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.floor(bytes / WAL_FRAME_BYTES))}`);
    const layout = db.pragma("user_version", { simple: true });
    // Another layout's file is never half-used: the caller starts over.
    if (layout !== LAYOUT && db.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get() !== undefined) {
      db.close();
      return null;
    }
    db.transaction(() => {
      db.exec(DDL);
      if (layout !== LAYOUT) db.pragma(`user_version = ${LAYOUT}`);
    })();
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}
