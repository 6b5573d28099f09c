import { LeaseLostError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { type ApplyContext, deriveToken } from "./apply-context.js";
import type { JsonValueShape } from "./json-value.js";
import { deadLetterQueueOf, isDeadLetterQueue } from "./queue-names.js";
import { storedJson } from "./stored-json.js";

export interface EnqueueResult {
  readonly queue: string;
  readonly messageId: string;
  readonly visibleAtMs: number;
}

export interface LeasedMessage {
  readonly messageId: string;
  readonly body: unknown;
  /** Leases this message has received, this one included. */
  readonly attempts: number;
  readonly enqueuedAtMs: number;
}

export interface LeaseResult {
  readonly queue: string;
  /** Null when no message was visible. */
  readonly leaseToken: string | null;
  readonly leaseExpiresAtMs: number | null;
  readonly messages: LeasedMessage[];
}

/** A visible message as a lease first sees it: its body's size, not the body. */
interface CandidateRow {
  seq: number;
  message_id: string;
  body_bytes: number;
  enqueued_ms: number;
  attempts: number;
}

interface MessageRow {
  seq: number;
  message_id: string;
  body: string;
  enqueued_ms: number;
  attempts: number;
  lease_token: string | null;
  lease_expires_ms: number | null;
}

/** At most this many dead letters expire per dead-lettering, which adds one. */
const EXPIRY_BATCH = 4;

/**
 * Work queues with visibility timeouts. A lease hides a message until `now + visibility`; when that time
 * passes without an ack the message is visible again and its old token no longer counts, so lease expiry
 * needs no sweep: it follows from entry time alone.
 */
export class Queues {
  private readonly insert: Database.Statement<[string, string, string, string, number, number]>;
  private readonly visible: Database.Statement<[string, string, number, number], CandidateRow>;
  private readonly bodyOf: Database.Statement<[number], string>;
  private readonly byId: Database.Statement<[string, string, string], MessageRow>;
  private readonly take: Database.Statement<[string, number, number, number]>;
  private readonly extend: Database.Statement<[number, number, number]>;
  private readonly release: Database.Statement<[number, number]>;
  private readonly move: Database.Statement<[string, number, number]>;
  private readonly remove: Database.Statement<[number]>;
  private readonly expireDead: Database.Statement<[string, string, number]>;

  constructor(db: Database.Database) {
    const columns = "seq, message_id, body, enqueued_ms, attempts, lease_token, lease_expires_ms";
    this.insert = db.prepare(
      `INSERT INTO queue_messages (tenant, queue, message_id, body, enqueued_ms, visible_at_ms, attempts)
       VALUES (?, ?, ?, ?, ?, ?, 0)`,
    );
    this.visible = db.prepare(
      `SELECT seq, message_id, octet_length(body) AS body_bytes, enqueued_ms, attempts FROM queue_messages
       WHERE tenant = ? AND queue = ? AND visible_at_ms <= ? ORDER BY visible_at_ms, seq LIMIT ?`,
    );
    this.bodyOf = db.prepare<[number], string>("SELECT body FROM queue_messages WHERE seq = ?").pluck();
    this.byId = db.prepare(
      `SELECT ${columns} FROM queue_messages WHERE tenant = ? AND queue = ? AND message_id = ?`,
    );
    this.take = db.prepare(
      `UPDATE queue_messages SET attempts = attempts + 1, lease_token = ?, lease_expires_ms = ?,
       visible_at_ms = ? WHERE seq = ?`,
    );
    this.extend = db.prepare(
      "UPDATE queue_messages SET lease_expires_ms = ?, visible_at_ms = ? WHERE seq = ?",
    );
    this.release = db.prepare(
      "UPDATE queue_messages SET lease_token = NULL, lease_expires_ms = NULL, visible_at_ms = ? WHERE seq = ?",
    );
    this.move = db.prepare(
      `UPDATE queue_messages SET queue = ?, lease_token = NULL, lease_expires_ms = NULL, visible_at_ms = ?
       WHERE seq = ?`,
    );
    this.remove = db.prepare("DELETE FROM queue_messages WHERE seq = ?");
    // A dead letter's visibility time is when it arrived or its last lease ended; a leased one is
    // visible only in the future, so it never matches.
    this.expireDead = db.prepare(
      `DELETE FROM queue_messages WHERE seq IN (SELECT seq FROM queue_messages
       WHERE tenant = ? AND queue = ? AND visible_at_ms < ? ORDER BY visible_at_ms, seq LIMIT ${EXPIRY_BATCH})`,
    );
  }

  /** `ordinal` tells apart the messages one command enqueues (an outbox holds several). */
  enqueue(
    ctx: ApplyContext,
    queue: string,
    message: { readonly body: unknown; readonly shape: JsonValueShape },
    delayMs: number,
    ordinal: number,
  ): EnqueueResult {
    const messageId = `${ctx.index}.${ordinal}`;
    const visibleAtMs = ctx.nowMs + delayMs;
    const body = storedJson(message.body, message.shape, ctx.plainPayload);
    this.insert.run(ctx.tenant, queue, messageId, body, ctx.nowMs, visibleAtMs);
    return { queue, messageId, visibleAtMs };
  }

  /**
   * Leases up to `max` visible messages, oldest visibility first, while their bodies fit in
   * `maxLeaseBytes` (the first always goes). A message whose attempts are spent is dead-lettered instead
   * of leased, and the search goes on, so the batch still fills when it can; but one lease dead-letters at
   * most `maxLeaseBatch`, so that an apply's work stays bounded, and the next lease goes on from there.
   */
  leaseBatch(ctx: ApplyContext, queue: string, max: number, visibilityMs: number): LeaseResult {
    const token = deriveToken(ctx, "lease");
    const expiresAtMs = ctx.nowMs + visibilityMs;
    const messages: LeasedMessage[] = [];
    let bodyBytes = 0;
    let deadLettered = 0;
    search: for (;;) {
      const candidates = this.visible.all(ctx.tenant, queue, ctx.nowMs, max - messages.length);
      if (candidates.length === 0) break;
      for (const row of candidates) {
        if (this.attemptsSpent(ctx, queue, row)) {
          if (deadLettered === ctx.limits.maxLeaseBatch) break search;
          this.deadLetter(ctx, queue, row);
          deadLettered++;
          continue;
        }
        if (messages.length > 0 && bodyBytes + row.body_bytes > ctx.limits.maxLeaseBytes) break search;
        bodyBytes += row.body_bytes;
        this.take.run(token, expiresAtMs, expiresAtMs, row.seq);
        messages.push({
          messageId: row.message_id,
          body: JSON.parse(this.bodyOf.get(row.seq)!),
          attempts: row.attempts + 1,
          enqueuedAtMs: row.enqueued_ms,
        });
      }
      if (messages.length === max) break;
    }
    return messages.length === 0
      ? { queue, leaseToken: null, leaseExpiresAtMs: null, messages }
      : { queue, leaseToken: token, leaseExpiresAtMs: expiresAtMs, messages };
  }

  ack(
    ctx: ApplyContext,
    queue: string,
    messageId: string,
    token: string,
  ): { queue: string; messageId: string } {
    const row = this.leased(ctx, queue, messageId, token);
    this.remove.run(row.seq);
    return { queue, messageId };
  }

  /** Returns a leased message; one whose attempts are spent goes straight to the dead-letter queue. */
  nack(
    ctx: ApplyContext,
    queue: string,
    messageId: string,
    token: string,
    delayMs: number,
  ): { queue: string; messageId: string; visibleAtMs: number; deadLettered: boolean } {
    const row = this.leased(ctx, queue, messageId, token);
    if (this.attemptsSpent(ctx, queue, row)) {
      this.deadLetter(ctx, queue, row);
      return { queue, messageId, visibleAtMs: ctx.nowMs, deadLettered: true };
    }
    this.release.run(ctx.nowMs + delayMs, row.seq);
    return { queue, messageId, visibleAtMs: ctx.nowMs + delayMs, deadLettered: false };
  }

  renew(
    ctx: ApplyContext,
    queue: string,
    messageId: string,
    token: string,
    visibilityMs: number,
  ): { queue: string; messageId: string; leaseExpiresAtMs: number } {
    const row = this.leased(ctx, queue, messageId, token);
    const expiresAtMs = ctx.nowMs + visibilityMs;
    this.extend.run(expiresAtMs, expiresAtMs, row.seq);
    return { queue, messageId, leaseExpiresAtMs: expiresAtMs };
  }

  /** The message, if `token` holds its lease now; otherwise LeaseLost, saying why. */
  private leased(ctx: ApplyContext, queue: string, messageId: string, token: string): MessageRow {
    const row = this.byId.get(ctx.tenant, queue, messageId);
    if (row === undefined) {
      throw new LeaseLostError(`message ${messageId} is no longer in queue ${queue}`, {
        reason: "MessageNotFound",
      });
    }
    if (row.lease_token !== token) {
      throw new LeaseLostError(`message ${messageId} is not leased with this token`, {
        reason: "LeaseTokenMismatch",
      });
    }
    if (row.lease_expires_ms === null || row.lease_expires_ms <= ctx.nowMs) {
      throw new LeaseLostError(`the lease of message ${messageId} expired`, { reason: "LeaseExpired" });
    }
    return row;
  }

  private attemptsSpent(ctx: ApplyContext, queue: string, row: { readonly attempts: number }): boolean {
    return row.attempts >= ctx.limits.maxDeliveryAttempts && !isDeadLetterQueue(queue);
  }

  /**
   * Moves a message to the dead-letter queue, and removes that queue's messages older than
   * `deadLetterRetentionMs`: a dead-letter queue grows only here, so it is trimmed here too.
   */
  private deadLetter(ctx: ApplyContext, queue: string, row: { readonly seq: number }): void {
    const deadLetters = deadLetterQueueOf(queue);
    this.move.run(deadLetters, ctx.nowMs, row.seq);
    this.expireDead.run(ctx.tenant, deadLetters, ctx.nowMs - ctx.limits.deadLetterRetentionMs);
  }
}
