import type { FsyncSite } from "../fs/fsync.js";
import type { NodeId, Ready, Role } from "../raft/types.js";

/**
 * Log indexes between a follower's applies while it keeps up (see fsyncSite): each voter applies
 * during the fsync of the append that reaches its own phase of this stride.
 */
export const FOLLOWER_APPLY_STRIDE = 8;
/** Committed entries a follower holds back at most; beyond them it applies during its next fsync. */
export const FOLLOWER_MAX_HELD = 4 * FOLLOWER_APPLY_STRIDE;

/**
 * When a voter that does not lead applies what committed: an apply right after an acknowledgement
 * runs just when the leader commits, applies and answers, on the same two CPUs, and one entry at a
 * time. So a follower holds committed entries back and applies them together during a later fsync,
 * when it only waits (docs/decisions/0012-held-follower-applies.md). `held` below is how many
 * committed entries the voter holds back already.
 */
export class FollowerApplyPolicy {
  /** Where this voter's phase of FOLLOWER_APPLY_STRIDE lies: voters in sorted order spread over it. */
  readonly phase: number;

  constructor(id: NodeId, voters: readonly NodeId[]) {
    const position = [...voters].sort().indexOf(id);
    this.phase = Math.floor((Math.max(0, position) * FOLLOWER_APPLY_STRIDE) / voters.length);
  }

  /** Whether a voter in `role` holds `committed` more entries back rather than applying them now. */
  holdsBack(role: Role, held: number, committed: number): boolean {
    return role !== "leader" && held + committed <= FOLLOWER_MAX_HELD;
  }

  /** Whether a voter in `role` holds committed entries back. */
  holding(role: Role, held: number): boolean {
    return role !== "leader" && held > 0;
  }

  /**
   * Where the log fsync of `rd` runs. A leader's on the thread pool: its event loop serves requests
   * and acknowledgements meanwhile and applies what committed. Anyone else's on its event loop, so
   * that its acknowledgement leaves as soon as the fsync returns, without the two thread hand-offs,
   * and what committed is held back; except when the append reaches this voter's phase of
   * FOLLOWER_APPLY_STRIDE with something to apply, or there is more to apply than a follower holds:
   * then on the thread pool, applying meanwhile. The phases keep the followers from paying the
   * hand-offs on the same append, so one of them acknowledges each append at full speed.
   */
  fsyncSite(role: Role, held: number, rd: Pick<Ready, "entries" | "committedEntries">): FsyncSite {
    if (role === "leader") return "thread-pool";
    const toApply = held + rd.committedEntries.length;
    if (toApply === 0) return "event-loop";
    if (toApply > FOLLOWER_MAX_HELD) return "thread-pool";
    if (rd.entries.length === 0) return "event-loop";
    const first = rd.entries[0]!.index;
    const last = rd.entries[rd.entries.length - 1]!.index;
    const lastInPhase =
      last -
      ((((last - this.phase) % FOLLOWER_APPLY_STRIDE) + FOLLOWER_APPLY_STRIDE) % FOLLOWER_APPLY_STRIDE);
    return lastInPhase >= first ? "thread-pool" : "event-loop";
  }
}
