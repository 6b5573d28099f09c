import type { MemoryStorage } from "../raft/memory-storage.js";

/**
 * Raises the stored commit index to what the state machine applied, as production does at start
 * (voter/raise-commit.ts): a crash can keep an apply but lose the commit index that allowed it, which
 * no write had carried yet (see planReady). An applied index beyond the log's last entry is left for
 * the core to refuse: the log lost entries the state machine applied. Returns whether it raised it.
 */
export function raiseCommitToApplied(
  storage: Pick<MemoryStorage, "initialState" | "lastIndex" | "setHardState">,
  applied: number,
): boolean {
  const { hardState } = storage.initialState();
  if (applied <= hardState.commit || applied > storage.lastIndex()) return false;
  storage.setHardState({ ...hardState, commit: applied });
  return true;
}
