import type { DurableLogStore } from "../../storage/durable-log-store.js";
import type { StateMachine } from "../state-machine.js";

/**
 * What a voter does at start between opening its log and its state: install the log's snapshot when
 * the state is behind it, then apply the committed entries the state does not hold yet. The state
 * database does not fsync its applies, so this replay is what brings back an apply a crash lost.
 */
export function replayCommitted(store: DurableLogStore, sm: StateMachine): void {
  const snapshotPath = store.currentSnapshotPath();
  if (snapshotPath !== null && sm.applied().index < store.snapshotIndex())
    sm.restoreFromSnapshot(snapshotPath);
  const commit = store.initialState().hardState.commit;
  const from = sm.applied().index + 1;
  if (from <= commit) sm.applyBatch(store.entries(from, commit + 1, Number.POSITIVE_INFINITY));
}
