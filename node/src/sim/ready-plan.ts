import { canSendBeforePersist, type Entry, type HardState, type Message, type Ready } from "../raft/index.js";
import type { DiskWrite } from "./sim-disk.js";

/** What the production driver carries from one Ready to the next about hard states. */
export interface HeldHardState {
  /** The hard state of the last Ready handed to the disk or held back (the stored one at start). */
  readonly last: HardState;
  /** The latest hard state whose only change, the commit index, no write has carried yet. */
  readonly unsaved: HardState | null;
}

/**
 * How the production driver (voter/raft-driver.ts, `handle`) takes one Ready apart, in its order:
 * `early` leaves first; then `write` goes to the disk and is fsynced, `applyDuringWrite` being applied
 * while that fsync runs; once it is durable `late` is sent and `applyAfterWrite` applied. Without a
 * write nothing waits.
 */
export interface ReadyPlan {
  /** A leader's replication traffic, which leaves while its own copy is written. */
  readonly early: readonly Message[];
  /** Null when the Ready persists nothing, or only moves the commit index. */
  readonly write: DiskWrite | null;
  /**
   * Committed entries below the Ready's first new entry, up to any membership change: durable since
   * the previous write.
   */
  readonly applyDuringWrite: readonly Entry[];
  /** Votes and acknowledgements, which vouch for what the write persists. */
  readonly late: readonly Message[];
  readonly applyAfterWrite: readonly Entry[];
  readonly held: HeldHardState;
}

/**
 * Plans a Ready as the production driver handles it. A hard state whose term and vote are unchanged
 * is not written on its own, unless it commits a membership change: the next write carries it, and a
 * crash before then loses it (a restart raises it again from the state machine, see
 * raiseCommitToApplied). The driver applies during the fsync only on its thread-pool site (a leader
 * always, a follower on some appends) and later otherwise; the plan always takes the earlier point,
 * which leaves a crash the most to find. Mirrored rather than shared: the driver's ordering lives in
 * its `handle`, bound to timers, files and the database, so a change to one must be made to the
 * other.
 */
export function planReady(rd: Ready, held: HeldHardState): ReadyPlan {
  const early = rd.messages.filter(canSendBeforePersist);
  const late = rd.messages.filter((m) => !canSendBeforePersist(m));
  const hard = rd.hardState;
  const last = hard ?? held.last;
  const onlyCommitMoved = hard !== null && hard.term === held.last.term && hard.vote === held.last.vote;
  // A committed membership change is written with the commit that reaches it (the driver's
  // commitsConfChange).
  const confCommitted = (hard ?? held.unsaved) !== null && rd.committedEntries.some((e) => e.type === "conf");
  if (
    rd.snapshot === null &&
    rd.entries.length === 0 &&
    (hard === null || onlyCommitMoved) &&
    !confCommitted
  ) {
    return {
      early,
      write: null,
      applyDuringWrite: [],
      late,
      applyAfterWrite: rd.committedEntries,
      held: { last, unsaved: hard ?? held.unsaved },
    };
  }
  // As the driver does, a snapshot write without a hard state of its own drops a held commit index.
  const write: DiskWrite = {
    snapshot: rd.snapshot,
    entries: rd.entries,
    hardState: hard ?? (rd.snapshot !== null ? null : held.unsaved),
  };
  const committed = rd.committedEntries;
  let stable = 0;
  if (rd.snapshot === null) {
    const firstNew = rd.entries[0]?.index ?? Number.POSITIVE_INFINITY;
    while (
      stable < committed.length &&
      committed[stable]!.index < firstNew &&
      committed[stable]!.type !== "conf"
    )
      stable++;
  }
  return {
    early,
    write,
    applyDuringWrite: committed.slice(0, stable),
    late,
    applyAfterWrite: committed.slice(stable),
    held: { last, unsaved: null },
  };
}
