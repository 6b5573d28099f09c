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

interface TrimBounds {
  readonly tenant: string;
  readonly from: number;
  /** Exclusive, at most the newest row's sequence number, which stays. */
  readonly to: number;
  readonly consumed: number;
  readonly timeBound: number;
}

interface ChangeRow {
  seq: number;
  kind: ChangeKind;
  key: string;
  version: number | null;
  edge: string | null;
  /** The stored JSON a delivery of the change holds (its document, or its edge); 0 for none. */
  held_bytes: number;
  current: number | null;
  at_ms: number;
}

/** The changes a scan found, and whether it stopped at its count or byte bound before its window's end. */
export interface ChangeScan {
  readonly changes: Change[];
  readonly full: boolean;
}

/** At most this many rows are trimmed per append, which adds one: a backlog shrinks by three an append. */
const TRIM_BATCH = 4;

/** The changes a subscription's cursor fell behind: trimmed before it read them, `fromSeq..throughSeq`. */
export interface TrimmedGap {
  readonly fromSeq: number;
  readonly throughSeq: number;
}

/**
 * The per-tenant change feed every catalog mutation appends to, in apply order. A put's entry names the
 * version rather than copying the document, which would double what every put writes; a delivery reads
 * the document while it is still at that version, and a newer version is delivered by its own entry.
 *
 * Each append trims the tenant's oldest rows that every subscription of the tenant has consumed (its
 * cursor is past them; rows a delivery holds are not, until its ack), or that are older than
 * `changeRetentionMs`, consumed or not. The newest row always stays, so the sequence goes on from it.
 */
export class ChangeFeed {
  private readonly insert: Database.Statement<
    [string, string, ChangeKind, string, number | null, string | null, number, number]
  >;
  private readonly last: Database.Statement<[string], { seq: number | null }>;
  private readonly head: Database.Statement<[string], { seq: number; at_ms: number }>;
  private readonly consumed: Database.Statement<[string], { cursor: number | null }>;
  private readonly trimHead: Database.Statement<[TrimBounds]>;
  private readonly window: Database.Statement<[string, number, number, string, string, number], ChangeRow>;
  private readonly document: Database.Statement<[string, string], string>;

  constructor(db: Database.Database) {
    // The sequence number is the tenant's highest plus one: a seek to the end of its primary-key range.
    this.insert = db.prepare(
      `INSERT INTO changes (tenant, seq, kind, key, version, edge, entry_index, at_ms)
       VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM changes WHERE tenant = ?), ?, ?, ?, ?, ?, ?)`,
    );
    this.last = db.prepare("SELECT max(seq) AS seq FROM changes WHERE tenant = ?");
    this.head = db.prepare("SELECT seq, at_ms FROM changes WHERE tenant = ? ORDER BY seq LIMIT 1");
    this.consumed = db.prepare("SELECT min(cursor) AS cursor FROM subscriptions WHERE tenant = ?");
    // Entry time never runs backwards and the feed is dense, so the rows this matches are a prefix.
    this.trimHead = db.prepare(
      `DELETE FROM changes WHERE tenant = @tenant AND seq >= @from AND seq < @to
       AND (seq <= @consumed OR at_ms < @timeBound)`,
    );
    // Sizes, not documents: a scan reads only the documents its byte bound lets it hold.
    this.window = db.prepare(
      `SELECT c.seq, c.kind, c.key, c.version, c.edge, d.version AS current, c.at_ms,
         CASE WHEN c.edge IS NOT NULL THEN octet_length(c.edge)
              WHEN d.version = c.version THEN coalesce(octet_length(d.value), 0) ELSE 0 END AS held_bytes
       FROM changes c LEFT JOIN documents d ON c.kind = 'put' AND d.tenant = c.tenant AND d.key = c.key
       WHERE c.tenant = ? AND c.seq > ? AND c.seq <= ? AND c.key >= ? AND c.key < ? ORDER BY c.seq LIMIT ?`,
    );
    this.document = db
      .prepare<[string, string], string>("SELECT value FROM documents WHERE tenant = ? AND key = ?")
      .pluck();
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
    this.trim(ctx);
  }

  lastSeq(tenant: string): number {
    return this.last.get(tenant)?.seq ?? 0;
  }

  /** The oldest sequence number the tenant's feed still holds; undefined when it never had a row. */
  firstSeq(tenant: string): number | undefined {
    return this.head.get(tenant)?.seq;
  }

  /** The gap a subscription at `cursor` would meet: what was trimmed past it; null when none. */
  gapAfter(tenant: string, cursor: number): TrimmedGap | null {
    const first = this.firstSeq(tenant);
    return first === undefined || first <= cursor + 1 ? null : { fromSeq: cursor + 1, throughSeq: first - 1 };
  }

  private trim(ctx: ApplyContext): void {
    const head = this.head.get(ctx.tenant);
    if (head === undefined) return;
    const timeBound = ctx.nowMs - ctx.limits.changeRetentionMs;
    // No subscription: nothing is consumed, and only age trims.
    const consumed = this.consumed.get(ctx.tenant)?.cursor ?? 0;
    if (head.at_ms >= timeBound && consumed < head.seq) return;
    const to = Math.min(head.seq + TRIM_BATCH, this.lastSeq(ctx.tenant));
    this.trimHead.run({ tenant: ctx.tenant, from: head.seq, to, consumed, timeBound });
  }

  /**
   * Changes with `after < seq <= through` whose key lies in `range`, in feed order: at most `limit`,
   * while what they hold fits in `maxBytes` (the first always goes).
   */
  scan(
    tenant: string,
    after: number,
    through: number,
    range: KeyRange,
    limit: number,
    maxBytes: number,
  ): ChangeScan {
    const changes: Change[] = [];
    let heldBytes = 0;
    for (const row of this.window.all(tenant, after, through, range.low, range.high, limit)) {
      if (changes.length > 0 && heldBytes + row.held_bytes > maxBytes) return { changes, full: true };
      heldBytes += row.held_bytes;
      const superseded = row.kind === "put" && row.current !== row.version;
      let value: unknown = null;
      if (row.edge !== null) value = JSON.parse(row.edge);
      else if (row.kind === "put" && !superseded) {
        const text = this.document.get(tenant, row.key);
        if (text !== undefined && text !== null) value = JSON.parse(text);
      }
      changes.push({
        seq: row.seq,
        kind: row.kind,
        key: row.key,
        version: row.version,
        value,
        superseded,
        atMs: row.at_ms,
      });
    }
    return { changes, full: changes.length === limit };
  }
}
