import type { Ready } from "../raft/index.js";
import { COMPACTED } from "./invariants.js";

/** What the check reads of a node's stored log. */
export interface StoredLog {
  firstIndex(): number;
  lastIndex(): number;
  term(index: number): number;
}

/**
 * The term a node's log holds at each index once `rd` extends its stored log `log`: the Ready's own
 * entries, then its snapshot, then the stored log; COMPACTED under a snapshot, undefined beyond the
 * log. For SafetyChecker.checkLeaderLog on a new leader's first Ready.
 */
export function termsWithReady(rd: Ready, log: StoredLog): (index: number) => number | undefined {
  const entries = rd.entries;
  const first = entries.length > 0 ? entries[0]!.index : Number.POSITIVE_INFINITY;
  const snapshot = rd.snapshot;
  return (i) => {
    if (i >= first) return entries[i - first]?.term;
    if (snapshot !== null) {
      if (i === snapshot.meta.index) return snapshot.meta.term;
      return i < snapshot.meta.index ? COMPACTED : undefined;
    }
    if (i < log.firstIndex() - 1) return COMPACTED;
    if (i > log.lastIndex()) return undefined;
    return log.term(i);
  };
}
