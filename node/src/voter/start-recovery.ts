import type { Logger } from "pino";
import type { DurableLogWriter } from "../storage/durable-log-writer.js";
import { StorageCorruptionError } from "../storage/storage-errors.js";
import type { DriverStateMachine } from "./driver-state-machine.js";
import { raiseCommitToApplied } from "./raise-commit.js";

/**
 * Brings the state machine and the log back in step after a crash, before the driver starts: a state
 * behind the log's snapshot file gets that snapshot installed, and a commit index behind the applied
 * index is raised to it. `statePath` names the state's files in the error of a state that lost what
 * it had made durable.
 */
export async function recoverAtStart(
  writer: DurableLogWriter,
  stateMachine: DriverStateMachine,
  statePath: string,
  log: Logger,
): Promise<void> {
  const store = writer.store;
  if (stateMachine.applied().index < store.snapshotIndex()) {
    // A crash between persisting a received snapshot and installing it leaves the state behind the log.
    const snapshotPath = store.verifiedSnapshotPath();
    if (snapshotPath === null) {
      // A snapshot point: the state was durable there before the log was compacted behind it, so the
      // state database lost what it had made durable (docs/decisions/0021-lazy-snapshots.md).
      throw new StorageCorruptionError(
        statePath,
        store.snapshotIndex(),
        `the state holds index ${stateMachine.applied().index}, behind the log's snapshot point`,
      );
    }
    stateMachine.restoreFromSnapshot(snapshotPath);
    log.info(
      { index: store.snapshotIndex() },
      "installed the log's snapshot into the state machine at start",
    );
  }
  if (await raiseCommitToApplied(writer, stateMachine.applied().index)) {
    log.info({ index: stateMachine.applied().index }, "raised the log's commit index to the applied index");
  }
}
