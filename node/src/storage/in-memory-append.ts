import type { Entry } from "../raft/types.js";
import type { EntryCache } from "./entry-cache.js";
import type { LogIndex } from "./log-index.js";

/**
 * Appends `entries` to the index and cache, replacing any from the first one's index on; entries at or
 * below the compaction point are skipped. Returns the entries kept, and whether they replaced some.
 */
export function appendInMemory(
  index: LogIndex,
  cache: EntryCache,
  entries: readonly Entry[],
): { kept: readonly Entry[]; truncates: boolean } {
  const skip = Math.max(0, index.startIndex + 1 - (entries[0]?.index ?? 0));
  if (skip >= entries.length) return { kept: [], truncates: false };
  const kept = skip === 0 ? entries : entries.slice(skip);
  const from = kept[0]!.index;
  const truncates = from <= index.lastIndex;
  if (truncates) {
    index.truncateFrom(from);
    cache.truncateFrom(from);
  }
  for (const e of kept) {
    index.append(e);
    cache.append(e);
  }
  return { kept, truncates };
}
