import { createHash } from "node:crypto";
import type { CanonicalLimits } from "./limits.js";

/** Everything an apply may depend on besides the database: all of it comes from the entry or the limits. */
export interface ApplyContext {
  readonly index: number;
  /** Entry time: the replicated clock as this entry moved it (see advanceClock). */
  readonly nowMs: number;
  readonly tenant: string;
  readonly principal: string;
  /** The key that sent the command; undefined for an entry that carries none (see CommandEnvelope). */
  readonly keyId: string | undefined;
  readonly commandId: string;
  /**
   * The command's payload holds no backslash, so no string parsed from it needs an escape when written
   * back as JSON (see storedJson).
   */
  readonly plainPayload: boolean;
  readonly limits: CanonicalLimits;
}

/**
 * An unguessable-enough, deterministic identifier (lease tokens, delivery IDs, etags, key IDs): the hash
 * of the command's identity and its log index, which no two commands share. Every voter derives the same
 * one; randomness would make the voters diverge.
 */
export function deriveToken(ctx: ApplyContext, purpose: string): string {
  return createHash("sha256")
    .update(`${purpose}\u0000${ctx.tenant}\u0000${ctx.commandId}\u0000${ctx.index}`)
    .digest("hex")
    .slice(0, 32);
}
