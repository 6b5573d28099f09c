import type { MemoryStorage } from "../raft/memory-storage.js";

/**
 * The most nodes whose disks hold one same entry at `index` durably; a snapshot covering `index`
 * holds the entry committed there and counts with any. An entry a leader commits must be held so by
 * a majority: were it held by fewer, a crash could leave the nodes lacking it to elect one of them
 * and overwrite it, which no leader's own count of its unsynced copy can prevent.
 */
export function durableCopies(storages: readonly MemoryStorage[], index: number): number {
  let covered = 0;
  const byTerm = new Map<number, number>();
  for (const storage of storages) {
    if (index <= storage.snapshot().meta.index) covered++;
    else if (index <= storage.lastIndex()) {
      const term = storage.term(index);
      byTerm.set(term, (byTerm.get(term) ?? 0) + 1);
    }
  }
  let best = 0;
  for (const count of byTerm.values()) best = Math.max(best, count);
  return covered + best;
}
