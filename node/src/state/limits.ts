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
}

export const DEFAULT_LIMITS: CanonicalLimits = Object.freeze({
  maxMutationBytes: 8 * 1024 * 1024,
  maxTransactionOperations: 256,
  maxOutboxMessages: 64,
  maxLeaseBatch: 256,
  maxDeliveryAttempts: 5,
  defaultVisibilityTimeoutMs: 30_000,
  maxVisibilityTimeoutMs: 12 * 60 * 60 * 1000,
  maxDelayMs: 24 * 60 * 60 * 1000,
  maxSubscriptionScan: 10_000,
  outcomeRetentionMs: 24 * 60 * 60 * 1000,
  outcomeRetentionCommands: 1_000_000,
});

const LIMIT_NAMES = Object.keys(DEFAULT_LIMITS).sort() as (keyof CanonicalLimits)[];

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
