import type { FsyncSite } from "../fs/fsync.js";
import type { LogStorage } from "../raft/log-storage.js";
import type { StoreOp } from "./durable-log-store.js";
import type { SnapshotRecord } from "./log-database.js";
import type { SnapshotFile } from "./snapshot-file-store.js";
import type { SnapshotFiles } from "./snapshot-files.js";
import type { SnapshotPolicyLog } from "./snapshot-policy.js";
import type { StorageError } from "./storage-errors.js";

/**
 * A durable Raft log as its writer (DurableLogWriter) and a voter's driver use it: the core's reads,
 * the snapshot files, and the write side of group commits. DurableLogStore on disk; the simulator
 * runs the driver and the writer over an in-memory model of it, whose crashes lose what no `sync`
 * covered.
 */
export interface LogStore extends LogStorage, SnapshotPolicyLog {
  readonly snapshotFiles: SnapshotFiles;
  /**
   * Whether the core asked for a snapshot to send while the log stood on a point with no file: the
   * driver then copies the state (`DurableLogWriter.createSnapshot`), which clears it.
   */
  snapshotWanted(): boolean;
  /** The current snapshot's sealed file; null for a new log's empty one and for a point. */
  currentSnapshot(): SnapshotFile | null;
  /** The path of the current snapshot file, for the state machine to install. */
  currentSnapshotPath(): string | null;
  /** As `currentSnapshotPath`, after reading the file whole against its checksum. */
  verifiedSnapshotPath(): string | null;
  /** While a background step must finish before the next commit, the promise to wait for; else null. */
  writeGate(): Promise<void> | null;
  /**
   * Applies `ops` in order, atomically, and returns per op the error that refused it (the op then
   * changed nothing) or null. Nothing is durable until `sync` resolves.
   */
  commit(ops: readonly StoreOp[]): (Error | null)[];
  /** Makes everything committed so far durable. */
  sync(): Promise<void>;
  /** Where the next `sync` calls run their fsyncs. */
  setFsyncSite(site: FsyncSite): void;
  /** Deletes entries up to `index` (at most the snapshot's). */
  compact(index: number): void;
  /** The refusal `commit` would give a snapshot at (index, term) taken locally, or null. */
  localSnapshotRefusal(index: number, term: number, withFile: boolean): Error | null;
  /** Deletes a sealed snapshot file a refused op carried, unless the log refers to it; never fails. */
  discardSnapshotFile(snap: SnapshotFile | SnapshotRecord): Promise<void>;
  close(): Promise<void>;
  /** Called once when the store fails in its background work; it is unusable from then on. */
  onFailure(listener: (err: StorageError) => void): void;
}
