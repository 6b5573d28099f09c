import { violationsOf } from "./violations.js";

/**
 * The checks of a subscription's history under faults: writers put documents under the subscription's
 * prefix, consumers take its deliveries (one outstanding at a time), acknowledge most and let the rest
 * lapse, and once the faults stop the subscription is drained. Then:
 * - the deliveries acknowledged by committed acks carry every committed put exactly once, in the
 *   change feed's order, and each key's versions in order;
 * - a delivered change is a committed put, with the value that put wrote unless a later put has
 *   superseded it, and nothing was trimmed;
 * - a lapsed delivery comes again from the same change, and no delivery began while an earlier one
 *   was outstanding (it lapsed first, or was acknowledged and the next takes up after it);
 * - every answer is its command's durable outcome.
 */

/** Put `f<n>` of value `n` to `key`, and the version an attempt was answered. */
export interface FeedWriteOp {
  readonly n: number;
  readonly key: string;
  answered?: number;
}

export interface DeliveredChange {
  readonly seq: number;
  readonly kind: string;
  readonly key: string;
  readonly version: number | null;
  readonly value: unknown;
  readonly superseded: boolean;
}

/** A delivery that was answered with changes. */
export interface DeliveryOp {
  readonly deliveryId: string;
  /** In the cluster's time: the delivery began `visibilityMs` before. */
  readonly expiresAtMs: number;
  readonly visibilityMs: number;
  readonly changes: readonly DeliveredChange[];
  readonly trimmed: boolean;
}

/** An ack of a delivery, and what an attempt was answered. */
export interface DeliveryAckOp {
  readonly commandId: string;
  readonly deliveryId: string;
  answered?: "acked" | "lease-lost";
}

export interface FeedHistory {
  readonly writes: readonly FeedWriteOp[];
  readonly deliveries: readonly DeliveryOp[];
  readonly acks: readonly DeliveryAckOp[];
}

export type FeedOutcome =
  | { readonly status: "committed"; readonly key?: string; readonly version?: number }
  | { readonly status: "failed"; readonly code: string }
  | { readonly status: "none" };

export interface FeedOutcomes {
  /** By write number. */
  readonly writes: ReadonlyMap<number, FeedOutcome>;
  /** By ack command ID. */
  readonly acks: ReadonlyMap<string, FeedOutcome>;
}

/** Everything a subscription that keeps its promises could not have answered; empty if none. */
export function feedViolations(history: FeedHistory, outcomes: FeedOutcomes): string[] {
  return violationsOf((report) => {
    const none: FeedOutcome = { status: "none" };

    // key@version -> the write that committed it.
    const committed = new Map<string, number>();
    for (const op of history.writes) {
      const outcome = outcomes.writes.get(op.n) ?? none;
      if (op.answered !== undefined && (outcome.status !== "committed" || outcome.version !== op.answered)) {
        report(`write f${op.n} was answered version ${op.answered}, and its outcome is ${describe(outcome)}`);
      }
      if (outcome.status === "committed") committed.set(`${outcome.key}@${outcome.version}`, op.n);
    }

    const acked = new Set<string>();
    for (const op of history.acks) {
      const outcome = outcomes.acks.get(op.commandId) ?? none;
      if (op.answered === "acked" && outcome.status !== "committed") {
        report(
          `ack ${op.commandId} of ${op.deliveryId} was answered, and its outcome is ${describe(outcome)}`,
        );
      }
      if (op.answered === "lease-lost" && (outcome.status !== "failed" || outcome.code !== "LeaseLost")) {
        report(
          `ack ${op.commandId} of ${op.deliveryId} was answered LeaseLost, and its outcome is ${describe(outcome)}`,
        );
      }
      if (outcome.status === "committed") acked.add(op.deliveryId);
    }

    // Each delivered change is a committed put, as it wrote it unless superseded.
    for (const delivery of history.deliveries) {
      if (delivery.trimmed)
        report(`delivery ${delivery.deliveryId} reports changes trimmed before they were read`);
      for (const change of delivery.changes) {
        const n = committed.get(`${change.key}@${change.version}`);
        if (change.kind !== "put" || n === undefined) {
          report(
            `delivery ${delivery.deliveryId} carried ${change.kind} ${change.key}@${change.version}, no committed put`,
          );
        } else if (!change.superseded && change.value !== n) {
          report(
            `delivery ${delivery.deliveryId} carried ${change.key}@${change.version} as ${JSON.stringify(change.value)}, not ${n}`,
          );
        }
      }
    }

    // In the cluster's time, a delivery begins only once the one before it has lapsed, or was acknowledged
    // (then it takes up after it); one that begins where a lapsed one did carries the same changes.
    const byStart = [...history.deliveries].sort(
      (a, b) => a.expiresAtMs - a.visibilityMs - (b.expiresAtMs - b.visibilityMs),
    );
    for (let i = 1; i < byStart.length; i++) {
      const [before, after] = [byStart[i - 1]!, byStart[i]!];
      const start = after.expiresAtMs - after.visibilityMs;
      if (acked.has(before.deliveryId)) {
        if (after.changes[0]!.seq <= before.changes.at(-1)!.seq) {
          report(
            `delivery ${after.deliveryId} began at seq ${after.changes[0]!.seq}, within acknowledged ${before.deliveryId}`,
          );
        }
      } else if (start < before.expiresAtMs) {
        report(
          `delivery ${after.deliveryId} began at ${start}, while ${before.deliveryId} was outstanding until ${before.expiresAtMs}`,
        );
      } else if (!oneLeadsTheOther(before, after)) {
        report(`delivery ${after.deliveryId} followed lapsed ${before.deliveryId} with other changes`);
      }
    }

    // The acknowledged deliveries carry every committed put once, in feed order, each key's versions rising.
    const seen = new Map<string, number>();
    let lastSeq = 0;
    const lastVersion = new Map<string, number>();
    for (const delivery of byStart.filter((d) => acked.has(d.deliveryId))) {
      for (const change of delivery.changes) {
        if (change.seq <= lastSeq) report(`change ${change.seq} was acknowledged after change ${lastSeq}`);
        lastSeq = Math.max(lastSeq, change.seq);
        const at = `${change.key}@${change.version}`;
        seen.set(at, (seen.get(at) ?? 0) + 1);
        if ((change.version ?? 0) <= (lastVersion.get(change.key) ?? 0)) {
          report(
            `${change.key}'s version ${change.version} was acknowledged after ${lastVersion.get(change.key)}`,
          );
        }
        lastVersion.set(change.key, change.version ?? 0);
      }
    }
    for (const [at, n] of committed) {
      const times = seen.get(at) ?? 0;
      if (times !== 1) report(`put ${at} (write f${n}) was acknowledged ${times} times`);
    }
  });
}

/**
 * Whether one delivery's changes begin the other's: a delivery after a lapse starts where the lapsed
 * one did, and may carry fewer (a smaller batch) or more (puts committed since).
 */
function oneLeadsTheOther(a: DeliveryOp, b: DeliveryOp): boolean {
  const [shorter, longer] = a.changes.length <= b.changes.length ? [a, b] : [b, a];
  return shorter.changes.every((c, i) => {
    const d = longer.changes[i]!;
    return c.seq === d.seq && c.key === d.key && c.version === d.version;
  });
}

function describe(outcome: FeedOutcome): string {
  switch (outcome.status) {
    case "committed":
      return outcome.version === undefined ? "committed" : `committed at version ${outcome.version}`;
    case "failed":
      return `failed (${outcome.code})`;
    default:
      return "never committed";
  }
}
