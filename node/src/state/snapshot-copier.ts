import { InternalError, InvalidArgumentError } from "@keyload/contract";
import type { AppliedPosition } from "./database.js";
import type { SnapshotCopyReply, SnapshotCopyRequest } from "./snapshot-protocol.js";
import { WorkerCalls } from "./worker-calls.js";
import { siblingModule } from "./worker-thread.js";

/**
 * Copies the state database for a snapshot on a worker thread, so the applying thread spends nothing
 * on it: the SQLite online backup (from the worker's own read-only connection) and the fsyncs took a
 * busy leader's event loop in bursts long enough to show in its p99
 * (docs/decisions/0015-background-snapshot-copies.md). The worker starts with the first snapshot and
 * stays for the next.
 */
export class SnapshotCopier {
  private readonly calls = new WorkerCalls<SnapshotCopyRequest, SnapshotCopyReply>(
    "the snapshot worker",
    siblingModule(import.meta.url, "snapshot-worker"),
    null,
    (message) => new InternalError(message, { reason: "SnapshotFailed" }),
  );

  /** Copies `source` to `target` and returns the position the copy covers, read from the copy. */
  async copy(source: string, target: string): Promise<AppliedPosition> {
    const reply = await this.calls.call((id) => ({ id, source, target }));
    if (reply.ok) return { index: reply.index, term: reply.term };
    if (reply.reason === "InvalidSnapshot") {
      throw new InvalidArgumentError(reply.message, { reason: "InvalidSnapshot" });
    }
    if (reply.reason === "StateSyncFailed" || reply.reason === "CorruptState") {
      throw new InternalError(reply.message, { reason: reply.reason });
    }
    throw new InternalError(`the snapshot copy failed: ${reply.message}`, { reason: "SnapshotFailed" });
  }

  close(): Promise<void> {
    return this.calls.close("the state machine closed before the snapshot was taken");
  }
}
