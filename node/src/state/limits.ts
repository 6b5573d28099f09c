import { createHash } from "node:crypto";
import { InvalidArgumentError } from "@keyload/contract";

/**
 * The canonical limits: the only configuration the state machine reads. Every one of them can change the
 * outcome of an apply, so all voters must hold identical values; peers compare `limitsFingerprint` in
 * their handshake and refuse to replicate with a voter whose limits differ.
 */
export interface CanonicalLimits {
  /** The largest command payload (request body text), in UTF-8 bytes. */
  readonly maxMutationBytes: number;
  /** Puts, deletes and checks in one transaction (or one processing/projection effect). */
  readonly maxTransactionOperations: number;
  /** Outbox messages one command may enqueue. */
  readonly maxOutboxMessages: number;
  /** Messages one queue lease, or changes one subscription delivery, may hold. */
  readonly maxLeaseBatch: number;
  /**
   * UTF-8 bytes of stored JSON one queue lease (its messages' bodies) or one subscription delivery (its
   * documents and edges) may hold; the first message or change always goes, however large. Its result is
   * one JSON text in the answer and in the command's stored outcome, which must stay far below what a
   * string can hold.
   */
  readonly maxLeaseBytes: number;
  /** Leases a message may receive; once spent, its next return moves it to the dead-letter queue. */
  readonly maxDeliveryAttempts: number;
  readonly defaultVisibilityTimeoutMs: number;
  readonly maxVisibilityTimeoutMs: number;
  /** The longest enqueue or nack delay. */
  readonly maxDelayMs: number;
  /** Change-feed rows one subscription delivery may scan past its cursor, matching or not. */
  readonly maxSubscriptionScan: number;
  /** An outcome is kept while it is younger than this (entry time) ... */
  readonly outcomeRetentionMs: number;
  /** ... or while it is among this many most recent commands. */
  readonly outcomeRetentionCommands: number;
  /**
   * Past the full outcome's window a compact record (digest, index, error code) still answers the ID
   * for this long, so a late retry never applies twice. At least `outcomeRetentionMs`.
   */
  readonly dedupeRetentionMs: number;
  /** A change-feed row older than this goes even when a lagging subscription has not consumed it. */
  readonly changeRetentionMs: number;
  /** A deleted document's tombstone is purged this long after the delete. */
  readonly tombstoneRetentionMs: number;
  /**
   * A dispatch directive is read by no one this long after it was appended; its channel's next append
   * removes it.
   */
  readonly directiveRetentionMs: number;
  /** A dead-lettered message is removed this long after it last became visible in its dead-letter queue. */
  readonly deadLetterRetentionMs: number;
  /** A membership row of status `dead` is removed once its I-am-alive time is this old. */
  readonly defunctMemberRetentionMs: number;
}

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

export const DEFAULT_LIMITS: CanonicalLimits = Object.freeze({
  maxMutationBytes: 8 * 1024 * 1024,
  maxTransactionOperations: 256,
  maxOutboxMessages: 64,
  maxLeaseBatch: 256,
  maxLeaseBytes: 8 * 1024 * 1024,
  maxDeliveryAttempts: 5,
  defaultVisibilityTimeoutMs: 30_000,
  maxVisibilityTimeoutMs: 12 * 60 * 60 * 1000,
  maxDelayMs: 24 * 60 * 60 * 1000,
  maxSubscriptionScan: 10_000,
  outcomeRetentionMs: DAY_MS,
  outcomeRetentionCommands: 1_000_000,
  dedupeRetentionMs: 7 * DAY_MS,
  // A week of history, as Kafka keeps a topic by default (log.retention.hours 168).
  changeRetentionMs: 7 * DAY_MS,
  // A day, as Kafka keeps a compacted topic's tombstones (delete.retention.ms); the version floor keeps
  // conditional writes right after the purge, so this only bounds how long a delete is visible as such.
  tombstoneRetentionMs: DAY_MS,
  // Directives are control messages read right away; a week covers a consumer down over a long weekend.
  directiveRetentionMs: 7 * DAY_MS,
  // Dead letters wait for a person: two weeks, the longest an SQS queue keeps a message.
  deadLetterRetentionMs: 14 * DAY_MS,
  // Orleans's own cleanup of defunct silos (DefunctSiloExpiration) waits a week.
  defunctMemberRetentionMs: 7 * DAY_MS,
});

const LIMIT_NAMES = Object.keys(DEFAULT_LIMITS).sort() as (keyof CanonicalLimits)[];

/** The limits as JSON text, names sorted: what a `system.canonicalLimits` entry carries and state keeps. */
export function limitsText(limits: CanonicalLimits): string {
  return JSON.stringify(Object.fromEntries(LIMIT_NAMES.map((name) => [name, limits[name]])));
}

/**
 * Limits from their JSON text (limitsText), every one named: a default filled in here would let two
 * builds with other defaults read one entry differently. Throws InvalidArgumentError.
 */
export function parseLimitsText(text: string): CanonicalLimits {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError("canonical limits are not JSON", { reason: "InvalidCanonicalLimit" });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError("canonical limits are not an object", { reason: "InvalidCanonicalLimit" });
  }
  const missing = LIMIT_NAMES.filter((name) => !Object.hasOwn(parsed, name));
  if (missing.length > 0) {
    throw new InvalidArgumentError(`canonical limits lack ${missing.join(", ")}`, {
      reason: "InvalidCanonicalLimit",
    });
  }
  return resolveLimits(parsed as Partial<CanonicalLimits>);
}

/** Fills defaults and rejects anything but positive safe integers, naming the offending property. */
export function resolveLimits(overrides: Partial<CanonicalLimits> = {}): CanonicalLimits {
  const resolved: Record<string, number> = {};
  for (const name of LIMIT_NAMES) {
    const value = overrides[name] ?? DEFAULT_LIMITS[name];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new InvalidArgumentError(`canonical limit ${name} must be a positive integer, got ${value}`, {
        reason: "InvalidCanonicalLimit",
      });
    }
    resolved[name] = value;
  }
  for (const name of Object.keys(overrides)) {
    if (!LIMIT_NAMES.includes(name as keyof CanonicalLimits)) {
      throw new InvalidArgumentError(`unknown canonical limit ${name}`, { reason: "InvalidCanonicalLimit" });
    }
  }
  const limits = resolved as unknown as CanonicalLimits;
  if (limits.defaultVisibilityTimeoutMs > limits.maxVisibilityTimeoutMs) {
    throw new InvalidArgumentError("defaultVisibilityTimeoutMs exceeds maxVisibilityTimeoutMs", {
      reason: "InvalidCanonicalLimit",
      details: { limit: "defaultVisibilityTimeoutMs" },
    });
  }
  // A shorter dedupe window would drop an ID's last trace while its full outcome still answers it.
  if (limits.dedupeRetentionMs < limits.outcomeRetentionMs) {
    throw new InvalidArgumentError("dedupeRetentionMs is shorter than outcomeRetentionMs", {
      reason: "InvalidCanonicalLimit",
      details: { limit: "dedupeRetentionMs" },
    });
  }
  return Object.freeze(limits);
}

/**
 * A stable hex digest of the limits for the peer handshake: names sorted, so it depends on the values
 * only, and versioned so a future limit changes every fingerprint rather than colliding with an old one.
 */
export function limitsFingerprint(limits: CanonicalLimits): string {
  const canonical = LIMIT_NAMES.map((name) => `${name}=${limits[name]}`).join("\n");
  return createHash("sha256").update(`keyload-canonical-limits-v1\n${canonical}`).digest("hex");
}
