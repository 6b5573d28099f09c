import type { DurableLogWriter } from "../storage/durable-log-writer.js";

/**
 * Raises the stored commit index to the state machine's applied index when a crash kept the newer apply
 * but lost the commit index that allowed it: the driver records a commit index without waiting for an
 * fsync (DurableLogWriter.writeCommitIndex) and the state database commits without one too, so the two
 * files can come back out of step. Every applied entry was committed, and the driver applies only
 * entries its log already holds durably, so the commit index is known to be at least the applied index;
 * the core refuses to start otherwise. An applied index beyond the log's last entry is left for the core
 * to refuse: the log lost entries it had made durable. Returns whether the commit index was raised.
 */
export async function raiseCommitToApplied(writer: DurableLogWriter, applied: number): Promise<boolean> {
  const { store } = writer;
  const { hardState } = store.initialState();
  if (applied <= hardState.commit || applied > store.lastIndex()) return false;
  await writer.write({ snapshot: null, entries: [], hardState: { ...hardState, commit: applied } });
  return true;
}
