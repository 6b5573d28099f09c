/**
 * The points between the durable steps of a write where a crash test stops the process, to show that
 * every such crash leaves a state recovery accepts, or where a fault test throws the error an I/O call
 * would (ENOSPC, EIO). Production passes no hook.
 */
export type StorageFaultPoint =
  /** A snapshot's bytes are in its temporary file, not yet fsynced. */
  | "snapshot-temp-written"
  /** The temporary file is fsynced but still has its temporary name. */
  | "snapshot-temp-synced"
  /** The file has its final name; the directory entry is not yet fsynced. */
  | "snapshot-renamed"
  /** The snapshot file is durable; the log does not refer to it yet. */
  | "snapshot-dir-synced"
  /**
   * A write batch is in the journal (one carrying a snapshot: committed to SQLite), not yet fsynced.
   */
  | "log-committed"
  /**
   * The group's fdatasync is about to run; a hook that throws here stands for that fdatasync failing,
   * its error becoming the store's failure.
   */
  | "log-fsync"
  /** The batch is fsynced; nothing is acknowledged yet and superseded snapshot files still exist. */
  | "log-synced"
  /**
   * At open, files the log no longer refers to are about to be deleted from the snapshot directory:
   * the state that superseded them must be durable by now, not only in the log's WAL.
   */
  | "snapshots-clearing"
  /**
   * The state machine's fsync of its applied state (before a snapshot point is recorded) is about to
   * run; a hook that throws here stands for that fsync failing.
   */
  | "state-sync";

export type FaultHook = (point: StorageFaultPoint) => void;
