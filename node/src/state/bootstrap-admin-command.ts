import type { CommandEnvelope } from "./command-envelope.js";
import { SYSTEM_SUBMITTER, SYSTEM_TENANT } from "./principals.js";

/**
 * The one command ID every voter proposes the bootstrap admin under. The key hash travels outside the
 * digest (as `generated`), so proposals from voters configured with different keys are one command:
 * any after the first committed is answered as a duplicate, without a write.
 */
export const BOOTSTRAP_ADMIN_COMMAND_ID = "system.bootstrap-admin";

/** The leader's stamps, as on every command it proposes (see CommandEnvelope). */
export interface LeaderStamps {
  readonly timestampMs: number;
  readonly monotonicMs: number;
  /** The wall-clock time a majority of the voters had reached, when the leader knows it (ReplicatedClock). */
  readonly quorumWallMs?: number;
}

/**
 * The `system.bootstrapAdmin` command for the admin key with this hash (the SHA-256 of the key, which
 * itself never enters the log), as a leader proposes it and as tests build it. It has no body.
 */
export function bootstrapAdminCommand(keyHash: string, stamps: LeaderStamps): CommandEnvelope {
  return {
    commandId: BOOTSTRAP_ADMIN_COMMAND_ID,
    kind: "system.bootstrapAdmin",
    tenant: SYSTEM_TENANT,
    principal: SYSTEM_SUBMITTER,
    timestampMs: stamps.timestampMs,
    monotonicMs: stamps.monotonicMs,
    ...(stamps.quorumWallMs === undefined ? {} : { quorumWallMs: stamps.quorumWallMs }),
    params: {},
    generated: { keyHash },
    payload: "",
  };
}
