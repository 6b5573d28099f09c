import { FailedPreconditionError, LeaseLostError, NotFoundError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { type ApplyContext, deriveToken } from "./apply-context.js";
import type { Change, ChangeFeed, TrimmedGap } from "./change-feed.js";
import { prefixRange } from "./key-range.js";

export interface SubscriptionState {
  readonly name: string;
  readonly prefix: string;
  /** The last feed sequence number acknowledged. */
  readonly cursor: number;
}

export interface Delivery {
  readonly name: string;
  /** Null when nothing matched: then no lease is held and the cursor has moved past what was scanned. */
  readonly deliveryId: string | null;
  readonly leaseExpiresAtMs: number | null;
  readonly changes: Change[];
  readonly cursor: number;
  /**
   * Changes past the cursor that retention trimmed before this subscription read them (see ChangeFeed):
   * they are skipped, and said so here. Null when none were.
   */
  readonly trimmed: TrimmedGap | null;
}

interface SubscriptionRow {
  prefix: string;
  cursor: number;
  delivery_id: string | null;
  delivery_end: number | null;
  delivery_expires_ms: number | null;
}

/**
 * Named cursors over a tenant's change feed, filtered by key prefix. One delivery is outstanding at a
 * time: it leases the next batch, and only its ack moves the cursor, so an expired delivery is simply
 * delivered again from the same cursor.
 */
export class Subscriptions {
  private readonly find: Database.Statement<[string, string], SubscriptionRow>;
  private readonly insert: Database.Statement<[string, string, string, number, number]>;
  private readonly setPrefix: Database.Statement<[string, number, string, string]>;
  private readonly setDelivery: Database.Statement<[string, number, number, number, string, string]>;
  private readonly advance: Database.Statement<[number, number, string, string]>;

  constructor(
    db: Database.Database,
    private readonly feed: ChangeFeed,
  ) {
    this.find = db.prepare(
      `SELECT prefix, cursor, delivery_id, delivery_end, delivery_expires_ms FROM subscriptions
       WHERE tenant = ? AND name = ?`,
    );
    this.insert = db.prepare(
      "INSERT INTO subscriptions (tenant, name, prefix, cursor, updated_index) VALUES (?, ?, ?, ?, ?)",
    );
    this.setPrefix = db.prepare(
      `UPDATE subscriptions SET prefix = ?, delivery_id = NULL, delivery_end = NULL, delivery_expires_ms = NULL,
       updated_index = ? WHERE tenant = ? AND name = ?`,
    );
    this.setDelivery = db.prepare(
      `UPDATE subscriptions SET delivery_id = ?, delivery_end = ?, delivery_expires_ms = ?, updated_index = ?
       WHERE tenant = ? AND name = ?`,
    );
    this.advance = db.prepare(
      `UPDATE subscriptions SET cursor = ?, delivery_id = NULL, delivery_end = NULL, delivery_expires_ms = NULL,
       updated_index = ? WHERE tenant = ? AND name = ?`,
    );
  }

  /**
   * Creates a subscription whose cursor starts at the beginning of the feed, or at its current end with
   * `fromEnd`. On an existing one, a new prefix cancels the outstanding delivery and keeps the cursor.
   */
  put(
    ctx: ApplyContext,
    name: string,
    prefix: string,
    fromEnd: boolean,
  ): SubscriptionState & { created: boolean } {
    const row = this.find.get(ctx.tenant, name);
    if (row === undefined) {
      const cursor = fromEnd ? this.feed.lastSeq(ctx.tenant) : 0;
      this.insert.run(ctx.tenant, name, prefix, cursor, ctx.index);
      return { name, prefix, cursor, created: true };
    }
    if (row.prefix !== prefix) this.setPrefix.run(prefix, ctx.index, ctx.tenant, name);
    return { name, prefix, cursor: row.cursor, created: false };
  }

  deliver(ctx: ApplyContext, name: string, max: number, visibilityMs: number): Delivery {
    const row = this.existing(ctx, name);
    if (row.delivery_id !== null && row.delivery_expires_ms !== null && row.delivery_expires_ms > ctx.nowMs) {
      throw new FailedPreconditionError(`subscription ${name} has a delivery outstanding`, {
        reason: "DeliveryOutstanding",
      });
    }
    const trimmed = this.feed.gapAfter(ctx.tenant, row.cursor);
    const from = trimmed === null ? row.cursor : trimmed.throughSeq;
    // The feed is dense per tenant, so a bounded window of sequence numbers bounds the scan.
    const windowEnd = Math.min(from + ctx.limits.maxSubscriptionScan, this.feed.lastSeq(ctx.tenant));
    const { changes, full } = this.feed.scan(
      ctx.tenant,
      from,
      windowEnd,
      prefixRange(row.prefix),
      max,
      ctx.limits.maxLeaseBytes,
    );
    if (changes.length === 0) {
      this.advance.run(windowEnd, ctx.index, ctx.tenant, name);
      return { name, deliveryId: null, leaseExpiresAtMs: null, changes, cursor: windowEnd, trimmed };
    }
    // A full batch ends at its last change; a short one covers the whole window it scanned.
    const end = full ? changes[changes.length - 1]!.seq : windowEnd;
    const deliveryId = deriveToken(ctx, "delivery");
    const expiresAtMs = ctx.nowMs + visibilityMs;
    this.setDelivery.run(deliveryId, end, expiresAtMs, ctx.index, ctx.tenant, name);
    return { name, deliveryId, leaseExpiresAtMs: expiresAtMs, changes, cursor: row.cursor, trimmed };
  }

  ack(ctx: ApplyContext, name: string, deliveryId: string): SubscriptionState {
    const row = this.existing(ctx, name);
    if (row.delivery_id !== deliveryId || row.delivery_end === null) {
      throw new LeaseLostError(`delivery ${deliveryId} is not the outstanding delivery of ${name}`, {
        reason: "DeliveryNotOutstanding",
      });
    }
    if (row.delivery_expires_ms === null || row.delivery_expires_ms <= ctx.nowMs) {
      throw new LeaseLostError(`delivery ${deliveryId} expired`, { reason: "LeaseExpired" });
    }
    this.advance.run(row.delivery_end, ctx.index, ctx.tenant, name);
    return { name, prefix: row.prefix, cursor: row.delivery_end };
  }

  private existing(ctx: ApplyContext, name: string): SubscriptionRow {
    const row = this.find.get(ctx.tenant, name);
    if (row === undefined)
      throw new NotFoundError(`no subscription ${name}`, { reason: "SubscriptionNotFound" });
    return row;
  }
}
