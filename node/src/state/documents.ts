import { FailedPreconditionError, NotFoundError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { JsonText } from "../requests/json-text.js";
import type { ApplyContext } from "./apply-context.js";
import type { ChangeFeed } from "./change-feed.js";
import { checkJsonValue, indexedJsonValue } from "./json-value.js";
import type { SearchChanges } from "./search-changes.js";
import { storedJson } from "./stored-json.js";

export interface StoredDocument {
  readonly key: string;
  readonly value: unknown;
  readonly version: number;
}

/** A write's answer: the key and the version it produced (a delete's version is its tombstone's). */
export interface WriteResult {
  readonly key: string;
  readonly version: number;
}

interface DocumentRow {
  id: number;
  version: number;
  live: number;
}

/** At most this many tombstones are purged per delete, which makes one: a backlog shrinks by three a delete. */
const PURGE_BATCH = 4;

/**
 * Per-tenant JSON documents. A delete leaves a tombstone that keeps the version counter, so a key that is
 * deleted and written again continues from its last version: an `expectedVersion` read before the delete
 * can never match a later incarnation of the key. Deletes purge tombstones older than
 * `tombstoneRetentionMs`, raising the tenant's version floor to each purged version, and a key without a
 * row starts above that floor, so the rule holds after the purge too.
 */
export class Documents {
  private readonly find: Database.Statement<[string, string], DocumentRow>;
  private readonly insert: Database.Statement<[string, string, number, string, number]>;
  private readonly update: Database.Statement<[number, string, number, number]>;
  private readonly bury: Database.Statement<[number, number, number, number]>;
  private readonly floor: Database.Statement<[string], { version: number }>;
  private readonly expiredTombstones: Database.Statement<
    [number],
    { id: number; tenant: string; version: number }
  >;
  private readonly raiseFloor: Database.Statement<[string, number]>;
  private readonly purge: Database.Statement<[number]>;
  private readonly read: Database.Statement<[string, string], { version: number; value: string }>;

  constructor(
    db: Database.Database,
    private readonly feed: ChangeFeed,
    private readonly search: SearchChanges,
  ) {
    this.find = db.prepare(
      "SELECT id, version, value IS NOT NULL AS live FROM documents WHERE tenant = ? AND key = ?",
    );
    this.insert = db.prepare(
      "INSERT INTO documents (tenant, key, version, value, updated_index) VALUES (?, ?, ?, ?, ?)",
    );
    this.update = db.prepare(
      "UPDATE documents SET version = ?, value = ?, updated_index = ?, deleted_ms = NULL WHERE id = ?",
    );
    this.bury = db.prepare(
      "UPDATE documents SET version = ?, value = NULL, updated_index = ?, deleted_ms = ? WHERE id = ?",
    );
    this.floor = db.prepare("SELECT version FROM version_floors WHERE tenant = ?");
    // Through the partial index of tombstones, oldest delete first.
    this.expiredTombstones = db.prepare(
      `SELECT id, tenant, version FROM documents WHERE value IS NULL AND deleted_ms < ?
       ORDER BY deleted_ms, id LIMIT ${PURGE_BATCH}`,
    );
    this.raiseFloor = db.prepare(
      `INSERT INTO version_floors (tenant, version) VALUES (?, ?)
       ON CONFLICT (tenant) DO UPDATE SET version = max(version, excluded.version)`,
    );
    this.purge = db.prepare("DELETE FROM documents WHERE id = ?");
    this.read = db.prepare(
      "SELECT version, value FROM documents WHERE tenant = ? AND key = ? AND value IS NOT NULL",
    );
  }

  /** `expectedVersion` 0 means "must not exist"; absent means unconditional. */
  put(ctx: ApplyContext, key: string, value: unknown, expectedVersion: number | undefined): WriteResult {
    const row = this.find.get(ctx.tenant, key);
    checkVersion(key, row, expectedVersion);
    // The value check refuses the same values on every voter, whichever tenants its index follows.
    const { text, shape } = this.search.follows(ctx.tenant)
      ? indexedJsonValue(value)
      : { text: null, shape: checkJsonValue(value) };
    const json = storedJson(value, shape, ctx.plainPayload);
    let version: number;
    let id: number;
    if (row === undefined) {
      version = (this.floor.get(ctx.tenant)?.version ?? 0) + 1;
      id = Number(this.insert.run(ctx.tenant, key, version, json, ctx.index).lastInsertRowid);
    } else {
      version = row.version + 1;
      id = row.id;
      this.update.run(version, json, ctx.index, id);
    }
    if (text !== null) this.search.index(id, ctx.tenant, key, text);
    this.feed.append(ctx, "put", key, version, null);
    return { key, version };
  }

  delete(ctx: ApplyContext, key: string, expectedVersion: number | undefined): WriteResult {
    const row = this.find.get(ctx.tenant, key);
    if (row === undefined || !row.live) {
      throw new NotFoundError(`no document ${key}`, { reason: "DocumentNotFound" });
    }
    checkVersion(key, row, expectedVersion);
    const version = row.version + 1;
    this.bury.run(version, ctx.index, ctx.nowMs, row.id);
    this.search.drop(row.id, ctx.tenant);
    this.feed.append(ctx, "delete", key, version, null);
    this.purgeTombstones(ctx);
    return { key, version };
  }

  /** Tombstones grow only by deletes, so each delete purges the oldest expired ones, of any tenant. */
  private purgeTombstones(ctx: ApplyContext): void {
    for (const tombstone of this.expiredTombstones.all(ctx.nowMs - ctx.limits.tombstoneRetentionMs)) {
      this.raiseFloor.run(tombstone.tenant, tombstone.version);
      this.purge.run(tombstone.id);
    }
  }

  /** A transaction's version check: `version` 0 asserts the key holds no live document. */
  check(tenant: string, key: string, version: number): WriteResult {
    checkVersion(key, this.find.get(tenant, key), version);
    return { key, version };
  }

  get(tenant: string, key: string): StoredDocument | undefined {
    const row = this.read.get(tenant, key);
    return row === undefined ? undefined : { key, value: JSON.parse(row.value), version: row.version };
  }

  /** The document as `get` gives it, as JSON text: its stored value spliced in, never parsed. */
  getJson(tenant: string, key: string): JsonText | undefined {
    const row = this.read.get(tenant, key);
    return row === undefined ? undefined : new JsonText(documentJson(key, row));
  }
}

/** A document's answer: its stored JSON text spliced in without parsing it; `extra` adds fields. */
export function documentJson(key: string, row: { version: number; value: string }, extra = ""): string {
  return `{"key":${JSON.stringify(key)},"value":${row.value},"version":${row.version}${extra}}`;
}

function checkVersion(key: string, row: DocumentRow | undefined, expected: number | undefined): void {
  if (expected === undefined) return;
  const current = row?.live ? row.version : 0;
  if (current !== expected) {
    throw new FailedPreconditionError(
      `document ${key} is at version ${current === 0 ? "none" : current}, expected ${expected === 0 ? "none" : expected}`,
      { reason: "VersionMismatch" },
    );
  }
}
