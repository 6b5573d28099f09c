import type Database from "better-sqlite3";

/**
 * Bumped whenever a table or what a column holds changes. A database of an older version is migrated
 * when it opens (see migrateSchema) when it can be; any other version is refused. 4: API key hashes are
 * keyed from the cluster secret (ApiKeyHasher). 6: the canonical limits are kept in the state.
 */
export const SCHEMA_VERSION = 6;

/**
 * What schema 6 added: the canonical limits the state applies entries under (CanonicalLimitsStore), and
 * directives by time, for the expiry of idle channels' directives (Dispatch). Version 5 was a
 * short-lived layout of outcomes, never migrated from.
 */
export const V6_DDL = `
CREATE TABLE IF NOT EXISTS canonical_limits (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  limits TEXT NOT NULL,
  entry_index INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS directives_by_time ON directives (at_ms, tenant, channel, seq);
`;

/**
 * What schema 3 added, shared by the DDL of a new database and the migration of a version-2 one: the
 * compact dedupe records outcomes become past their full window, and each tenant's version floor,
 * raised as tombstones are purged.
 */
export const V3_DDL = `
CREATE TABLE command_dedupe (
  seq INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  command_id TEXT NOT NULL,
  entry_index INTEGER NOT NULL,
  digest BLOB NOT NULL,
  at_ms INTEGER NOT NULL,
  error_code TEXT,
  UNIQUE (tenant, command_id)
);

CREATE TABLE version_floors (
  tenant TEXT PRIMARY KEY,
  version INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** Tombstones only, oldest delete first: the purge reads them in this order. */
export const TOMBSTONE_INDEX =
  "CREATE INDEX documents_tombstones ON documents (deleted_ms, id) WHERE value IS NULL;";

/**
 * Every table of the state machine. Rows that are read in order during an apply have an index matching
 * that order, and every apply-time SELECT names its ORDER BY, so no decision depends on a query plan.
 */
const DDL = `
CREATE TABLE meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  schema_version INTEGER NOT NULL,
  applied_index INTEGER NOT NULL,
  applied_term INTEGER NOT NULL,
  clock_ms INTEGER NOT NULL,
  clock_term INTEGER NOT NULL,
  clock_monotonic_ms INTEGER NOT NULL
);

CREATE TABLE command_outcomes (
  seq INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  command_id TEXT NOT NULL,
  entry_index INTEGER NOT NULL,
  digest BLOB NOT NULL,
  at_ms INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  body TEXT NOT NULL,
  UNIQUE (tenant, command_id)
);
${V3_DDL}
CREATE TABLE documents (
  id INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  key TEXT NOT NULL,
  version INTEGER NOT NULL,
  value TEXT,
  updated_index INTEGER NOT NULL,
  deleted_ms INTEGER,
  UNIQUE (tenant, key)
);
${TOMBSTONE_INDEX}

CREATE TABLE changes (
  tenant TEXT NOT NULL,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  version INTEGER,
  edge TEXT,
  entry_index INTEGER NOT NULL,
  at_ms INTEGER NOT NULL,
  PRIMARY KEY (tenant, seq)
) WITHOUT ROWID;

CREATE TABLE edges (
  tenant TEXT NOT NULL,
  from_id TEXT NOT NULL,
  type TEXT NOT NULL,
  to_id TEXT NOT NULL,
  entry_index INTEGER NOT NULL,
  PRIMARY KEY (tenant, from_id, type, to_id)
) WITHOUT ROWID;
CREATE INDEX edges_inbound ON edges (tenant, to_id, type, from_id);

CREATE TABLE queue_messages (
  seq INTEGER PRIMARY KEY,
  tenant TEXT NOT NULL,
  queue TEXT NOT NULL,
  message_id TEXT NOT NULL,
  body TEXT NOT NULL,
  enqueued_ms INTEGER NOT NULL,
  visible_at_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  lease_token TEXT,
  lease_expires_ms INTEGER,
  UNIQUE (tenant, queue, message_id)
);
CREATE INDEX queue_messages_visible ON queue_messages (tenant, queue, visible_at_ms, seq);

CREATE TABLE subscriptions (
  tenant TEXT NOT NULL,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  cursor INTEGER NOT NULL,
  delivery_id TEXT,
  delivery_end INTEGER,
  delivery_expires_ms INTEGER,
  updated_index INTEGER NOT NULL,
  PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

CREATE TABLE membership_versions (
  tenant TEXT PRIMARY KEY,
  version INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE members (
  tenant TEXT NOT NULL,
  member_id TEXT NOT NULL,
  status TEXT NOT NULL,
  address TEXT NOT NULL,
  etag TEXT NOT NULL,
  i_am_alive_ms INTEGER NOT NULL,
  updated_index INTEGER NOT NULL,
  PRIMARY KEY (tenant, member_id)
) WITHOUT ROWID;

CREATE TABLE dispatch_channels (
  tenant TEXT NOT NULL,
  channel TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  PRIMARY KEY (tenant, channel)
) WITHOUT ROWID;

CREATE TABLE directives (
  tenant TEXT NOT NULL,
  channel TEXT NOT NULL,
  seq INTEGER NOT NULL,
  directive TEXT NOT NULL,
  data TEXT,
  at_ms INTEGER NOT NULL,
  entry_index INTEGER NOT NULL,
  PRIMARY KEY (tenant, channel, seq)
) WITHOUT ROWID;

CREATE TABLE tenants (
  tenant TEXT PRIMARY KEY,
  created_index INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE principals (
  principal_id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  roles TEXT NOT NULL,
  updated_index INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL,
  key_hash TEXT NOT NULL UNIQUE,
  created_index INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX api_keys_by_principal ON api_keys (principal_id, key_id);
${V6_DDL}`;

export function createSchema(db: Database.Database): void {
  db.exec(DDL);
  db.prepare(
    "INSERT INTO meta (id, schema_version, applied_index, applied_term, clock_ms, clock_term, clock_monotonic_ms) VALUES (1, ?, 0, 0, 0, 0, 0)",
  ).run(SCHEMA_VERSION);
}

/** True when the database has no state machine tables yet. */
export function isEmptyDatabase(db: Database.Database): boolean {
  const row = db
    .prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table' AND name = 'meta'")
    .get() as { n: number } | undefined;
  return row?.n === 0;
}
