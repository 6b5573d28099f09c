import type { LeaderStamps } from "./bootstrap-admin-command.js";
import type { CommandEnvelope } from "./command-envelope.js";
import { type CanonicalLimits, limitsFingerprint, limitsText } from "./limits.js";
import { SYSTEM_SUBMITTER, SYSTEM_TENANT } from "./principals.js";

/**
 * The `system.canonicalLimits` command a leader of `term` proposes to apply entries under `limits` from
 * its index on (CanonicalLimitsStore), its body the limits' JSON text. Its command ID names the term and
 * the limits: a retry of one proposal is one command, answered as a duplicate, while a later term's
 * proposal of limits the state held once before (a change undone) is a command of its own.
 */
export function canonicalLimitsCommand(
  limits: CanonicalLimits,
  term: number,
  stamps: LeaderStamps,
): CommandEnvelope {
  return {
    commandId: `system.canonical-limits.t${term}.${limitsFingerprint(limits).slice(0, 16)}`,
    kind: "system.canonicalLimits",
    tenant: SYSTEM_TENANT,
    principal: SYSTEM_SUBMITTER,
    timestampMs: stamps.timestampMs,
    monotonicMs: stamps.monotonicMs,
    ...(stamps.quorumWallMs === undefined ? {} : { quorumWallMs: stamps.quorumWallMs }),
    params: {},
    payload: limitsText(limits),
  };
}
