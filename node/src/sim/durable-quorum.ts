import type { NodeId, SnapshotMeta } from "../raft/types.js";

/** What a disk shows here: its log, and the latest snapshot's metadata, a point's included. */
export interface DurableLog {
  snapshotMeta(): SnapshotMeta;
  lastIndex(): number;
  term(index: number): number;
}

/**
 * How many of `voters` hold the entry at `index` durably, as far as electing a leader is concerned:
 * disks holding one same entry there, with a snapshot covering `index` (which holds the entry
 * committed there) counting with any; a snapshot point with no file covers it as well, the state
 * machine being durable there. A voter whose disk was lost (`diskOf` gives null) counts with
 * them: it never returns under its ID, so it can never vote for a leader that lacks the entry. An
 * entry a leader commits must be held so by a majority of the voters it counted: were it held by
 * fewer, a crash could leave the nodes lacking it to elect one of them and overwrite it, which no
 * leader's own count of its unsynced copy can prevent.
 *
 * The voters to pass are those of the configuration the leader had applied when it committed: its
 * quorum is counted over them, and one change at a time keeps a majority of them in every majority of
 * the configurations either side of it. Learners and removed nodes may hold the entry too; they count
 * for no election, so their copies do not protect it.
 */
export function durableCopies(
  voters: readonly NodeId[],
  diskOf: (id: NodeId) => DurableLog | null,
  index: number,
): number {
  let covered = 0;
  const byTerm = new Map<number, number>();
  for (const id of voters) {
    const storage = diskOf(id);
    if (storage === null) covered++;
    else if (index <= storage.snapshotMeta().index) covered++;
    else if (index <= storage.lastIndex()) {
      const term = storage.term(index);
      byTerm.set(term, (byTerm.get(term) ?? 0) + 1);
    }
  }
  let best = 0;
  for (const count of byTerm.values()) best = Math.max(best, count);
  return covered + best;
}
