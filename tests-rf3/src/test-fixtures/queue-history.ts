import { violationsOf } from "./violations.js";

/**
 * The checks of a work queue's history under faults: every message enqueued is acknowledged exactly
 * once, and no two leases of a message overlap.
 *
 * Producers enqueue numbered messages, consumers lease them, acknowledge most and abandon the rest
 * (their leases expire and they are delivered again), and once the faults stop the queue and its
 * dead-letter queue are drained. Each enqueue and ack is one command ID, retried under that ID while
 * its outcome is unknown, so its durable outcome (`GET /v1/commands/{id}`) says whether it committed
 * even when no attempt was answered. A lease answered says when it expires in the cluster's own
 * time, and how long it was for: so when it began.
 */

/** An enqueue of message `n` (its body `{ n }`), and the message ID an attempt was answered. */
export interface EnqueueOp {
  readonly n: number;
  answered?: string;
}

/** A lease that was answered, with the messages it delivered. */
export interface LeaseOp {
  readonly token: string;
  /** In the cluster's time: the lease began `visibilityMs` before. */
  readonly expiresAtMs: number;
  readonly visibilityMs: number;
  readonly messages: readonly { readonly messageId: string; readonly n: number; readonly attempts: number }[];
}

/** An ack of `messageId` under the lease `token`, and what an attempt was answered. */
export interface AckOp {
  readonly commandId: string;
  readonly messageId: string;
  readonly token: string;
  answered?: "acked" | "lease-lost";
}

export interface QueueHistory {
  readonly enqueues: readonly EnqueueOp[];
  readonly leases: readonly LeaseOp[];
  readonly acks: readonly AckOp[];
}

/** A command's durable outcome once the faults are over: its result's message ID, or its refusal. */
export type QueueOutcome =
  | { readonly status: "committed"; readonly messageId: string }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "none" };

export interface QueueOutcomes {
  /** By enqueue number. */
  readonly enqueues: ReadonlyMap<number, QueueOutcome>;
  /** By ack command ID. */
  readonly acks: ReadonlyMap<string, QueueOutcome>;
}

/** Everything in `history` a queue that keeps its promises could not have answered; empty if none. */
export function queueViolations(history: QueueHistory, outcomes: QueueOutcomes): string[] {
  return violationsOf((report) => {
    const none: QueueOutcome = { status: "none" };

    // Each committed enqueue made one message of its own, the one its answer named.
    const enqueued = new Map<string, number>();
    for (const op of history.enqueues) {
      const outcome = outcomes.enqueues.get(op.n) ?? none;
      if (
        op.answered !== undefined &&
        (outcome.status !== "committed" || outcome.messageId !== op.answered)
      ) {
        report(
          `enqueue ${op.n} was answered message ${op.answered}, and its outcome is ${describe(outcome)}`,
        );
      }
      if (outcome.status !== "committed") continue;
      const other = enqueued.get(outcome.messageId);
      if (other !== undefined) report(`enqueues ${other} and ${op.n} both made message ${outcome.messageId}`);
      enqueued.set(outcome.messageId, op.n);
    }

    // A lease delivers only committed messages, as enqueued, and a message's leases never overlap.
    const leasesOf = new Map<string, { start: number; end: number; attempts: number; token: string }[]>();
    for (const lease of history.leases) {
      for (const message of lease.messages) {
        const n = enqueued.get(message.messageId);
        if (n !== message.n) {
          report(
            `a lease delivered message ${message.messageId} as enqueue ${message.n}, which made ${n ?? "none"}`,
          );
        }
        const start = lease.expiresAtMs - lease.visibilityMs;
        const entry = { start, end: lease.expiresAtMs, attempts: message.attempts, token: lease.token };
        const list = leasesOf.get(message.messageId);
        if (list) list.push(entry);
        else leasesOf.set(message.messageId, [entry]);
      }
    }
    for (const [messageId, leases] of leasesOf) {
      leases.sort((a, b) => a.attempts - b.attempts);
      for (let i = 1; i < leases.length; i++) {
        const [before, after] = [leases[i - 1]!, leases[i]!];
        if (after.attempts === before.attempts) {
          report(`message ${messageId} was delivered twice as attempt ${after.attempts}`);
        } else if (after.start < before.end) {
          report(
            `message ${messageId}'s attempt ${after.attempts} was leased at ${after.start}, before attempt ` +
              `${before.attempts}'s lease ended at ${before.end}`,
          );
        }
      }
    }

    // An ack's answer is its outcome, and every message is acknowledged by exactly one committed ack.
    const ackedBy = new Map<string, string[]>();
    for (const op of history.acks) {
      const outcome = outcomes.acks.get(op.commandId) ?? none;
      const committed = outcome.status === "committed" && outcome.messageId === op.messageId;
      if (op.answered === "acked" && !committed) {
        report(
          `ack ${op.commandId} of ${op.messageId} was answered, and its outcome is ${describe(outcome)}`,
        );
      }
      if (op.answered === "lease-lost" && (outcome.status !== "failed" || outcome.code !== "LeaseLost")) {
        report(
          `ack ${op.commandId} of ${op.messageId} was answered LeaseLost, and its outcome is ${describe(outcome)}`,
        );
      }
      if (!committed) continue;
      const list = ackedBy.get(op.messageId);
      if (list) list.push(op.commandId);
      else ackedBy.set(op.messageId, [op.commandId]);
    }
    for (const [messageId, n] of enqueued) {
      const acks = ackedBy.get(messageId) ?? [];
      if (acks.length !== 1) {
        report(
          `message ${messageId} (enqueue ${n}) was acknowledged by ${acks.length} acks: ${acks.join(", ")}`,
        );
      }
    }
    for (const messageId of ackedBy.keys()) {
      if (!enqueued.has(messageId)) report(`message ${messageId} was acknowledged and never enqueued`);
    }
  });
}

function describe(outcome: QueueOutcome): string {
  switch (outcome.status) {
    case "committed":
      return `committed for message ${outcome.messageId}`;
    case "failed":
      return `failed (${outcome.code})`;
    default:
      return "never committed";
  }
}
