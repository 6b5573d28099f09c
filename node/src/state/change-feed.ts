import type Database from "better-sqlite3";
import type { ApplyContext } from "./apply-context.js";
import type { KeyRange } from "./key-range.js";

/** What changed: a document put or delete, or a graph edge put or delete (keyed by the edge's `from`). */
export type ChangeKind = "put" | "delete" | "edge.put" | "edge.delete";

export interface Change {
  /** Per-tenant, dense, starting at 1: subscriptions keep cursors in it. */
  readonly seq: number;
  readonly kind: ChangeKind;
  readonly key: string;
  /** The document version the change produced; null for edges. */
  readonly version: number | null;
  /**
   * For a put: the document as written, or null when a later change has superseded that version (the
   * later change follows in the feed). For an edge change: the edge. For a delete: null.
   */
  readonly value: unknown;
  readonly superseded: boolean;
  readonly atMs: number;
}

interface ChangeRow {
  seq: number;
  kind: ChangeKind;
  key: string;
  version: number | null;
  edge: string | null;
  value: string | null;
  current: number | null;
  at_ms: number;
}

/**
 * The per-tenant change feed every catalog mutation appends to, in apply order. A put's entry names the
 * version rather than copying the document, which would double what every put writes; a delivery reads
 * the document while it is still at that version, and a newer version is delivered by its own entry.
 */
export class ChangeFeed {
  private readonly insert: Database.Statement<
    [string, string, ChangeKind, string, number | null, string | null, number, number]
  >;
  private readonly last: Database.Statement<[string], { seq: number | null }>;
  private readonly window: Database.Statement<[string, number, number, string, string, number], ChangeRow>;

  constructor(db: Database.Database) {
    // The sequence number is the tenant's highest plus one: a seek to the end of its primary-key range.
    this.insert = db.prepare(
      `INSERT INTO changes (tenant, seq, kind, key, version, edge, entry_index, at_ms)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM changes WHERE tenant = ?), ?, ?, ?, ?, ?, ?)`,
    );
    this.last = db.prepare("SELECT max(seq) AS seq FROM changes WHERE tenant = ?");
    this.window = db.prepare(
      `SELECT c.seq, c.kind, c.key, c.version, c.edge, d.value, d.version AS current, c.at_ms
       FROM changes c LEFT JOIN documents d ON c.kind = 'put' AND d.tenant = c.tenant AND d.key = c.key
       WHERE c.tenant = ? AND c.seq > ? AND c.seq <= ? AND c.key >= ? AND c.key < ? ORDER BY c.seq LIMIT ?`,
    );
  }

  /** `edgeJson` is the serialized edge for edge changes, null for document changes. */
  append(
    ctx: ApplyContext,
    kind: ChangeKind,
    key: string,
    version: number | null,
    edgeJson: string | null,
  ): void {
    this.insert.run(ctx.tenant, ctx.tenant, kind, key, version, edgeJson, ctx.index, ctx.nowMs);
  }

  lastSeq(tenant: string): number {
    return this.last.get(tenant)?.seq ?? 0;
  }

  /** Changes with `after < seq <= through` whose key lies in `range`, in feed order, at most `limit`. */
  scan(tenant: string, after: number, through: number, range: KeyRange, limit: number): Change[] {
    return this.window.all(tenant, after, through, range.low, range.high, limit).map((row) => {
      const superseded = row.kind === "put" && row.current !== row.version;
      let value: unknown = null;
      if (row.edge !== null) value = JSON.parse(row.edge);
      else if (row.kind === "put" && !superseded && row.value !== null) value = JSON.parse(row.value);
      return {
        seq: row.seq,
        kind: row.kind,
        key: row.key,
        version: row.version,
        value,
        superseded,
        atMs: row.at_ms,
      };
    });
  }
}
