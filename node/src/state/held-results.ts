import type Database from "better-sqlite3";
import type { Change } from "./change-feed.js";
import { deadLetterQueueOf, isDeadLetterQueue } from "./queue-names.js";
import type { LeasedMessage, LeaseResult } from "./queues.js";
import type { Delivery } from "./subscriptions.js";

/**
 * How a stored outcome holds the stored JSON its result handed out: a lease's message bodies, a
 * delivery's documents. Each is already in the state, where it does not change (a message's body never
 * does; a document changes only with its version), so the outcome names it instead of copying it, and a
 * retry rebuilds the answer from it. Copies kept for the whole outcome window grew the state by every
 * lease's size (docs/decisions/0037).
 */
export type HeldForm = "lease" | "delivery";

/**
 * A result that hands out stored JSON: what is answered, and the smaller form its outcome stores. A
 * command handler returns one instead of the bare result.
 */
export class HeldResult {
  private constructor(
    readonly result: object,
    readonly form: HeldForm,
    readonly stored: object,
  ) {}

  /** A lease stores each message without its body. */
  static ofLease(lease: LeaseResult): HeldResult {
    const messages = lease.messages.map(({ body: _body, ...rest }) => rest);
    return new HeldResult(lease, "lease", { ...lease, messages });
  }

  /**
   * A delivery stores each put without the document it carries (its `value` key left out); a delete's
   * null and an edge, which the change feed keeps only while retention lets it, stay as they are.
   */
  static ofDelivery(delivery: Delivery): HeldResult {
    const changes = delivery.changes.map((change) => {
      if (!carriesDocument(change)) return change;
      const { value: _value, ...rest } = change;
      return rest;
    });
    return new HeldResult(delivery, "delivery", { ...delivery, changes });
  }
}

function carriesDocument(change: Change): boolean {
  return change.kind === "put" && !change.superseded && change.value !== null;
}

type StoredMessage = Omit<LeasedMessage, "body"> & { body?: unknown };
type StoredChange = Omit<Change, "value"> & { value?: unknown };

/**
 * Rebuilds a held result, its keys in the order the first answer had them, from its stored form and the rows it names. Undefined when one of them is gone
 * (a message acknowledged, a document at a later version): the answer can no longer be given as it was,
 * and the outcome counts as expired.
 */
export class HeldResultReader {
  private readonly messageBody: Database.Statement<[string, string, string], string>;
  private readonly documentAt: Database.Statement<[string, string, number], string>;

  constructor(db: Database.Database) {
    this.messageBody = db
      .prepare<[string, string, string], string>(
        "SELECT body FROM queue_messages WHERE tenant = ? AND queue = ? AND message_id = ?",
      )
      .pluck();
    this.documentAt = db
      .prepare<[string, string, number], string>(
        "SELECT value FROM documents WHERE tenant = ? AND key = ? AND version = ? AND value IS NOT NULL",
      )
      .pluck();
  }

  read(tenant: string, form: HeldForm, stored: unknown): object | undefined {
    return form === "lease"
      ? this.lease(tenant, stored as LeaseResult)
      : this.delivery(tenant, stored as Delivery);
  }

  private lease(tenant: string, stored: LeaseResult): LeaseResult | undefined {
    const messages: LeasedMessage[] = [];
    for (const message of stored.messages as StoredMessage[]) {
      const body = this.bodyOf(tenant, stored.queue, message.messageId);
      if (body === undefined) return undefined;
      const { messageId, attempts, enqueuedAtMs } = message;
      messages.push({ messageId, body: JSON.parse(body), attempts, enqueuedAtMs });
    }
    return { ...stored, messages };
  }

  /** A message keeps its ID when it is dead-lettered, so it is looked for in both queues. */
  private bodyOf(tenant: string, queue: string, messageId: string): string | undefined {
    const body = this.messageBody.get(tenant, queue, messageId);
    if (body !== undefined || isDeadLetterQueue(queue)) return body;
    return this.messageBody.get(tenant, deadLetterQueueOf(queue), messageId);
  }

  private delivery(tenant: string, stored: Delivery): Delivery | undefined {
    const changes: Change[] = [];
    for (const change of stored.changes as StoredChange[]) {
      let value: unknown = change.value;
      if (!("value" in change)) {
        const document =
          change.version === null ? undefined : this.documentAt.get(tenant, change.key, change.version);
        if (document === undefined) return undefined;
        value = JSON.parse(document);
      }
      const { seq, kind, key, version, superseded, atMs } = change;
      changes.push({ seq, kind, key, version, value, superseded, atMs });
    }
    return { ...stored, changes };
  }
}
