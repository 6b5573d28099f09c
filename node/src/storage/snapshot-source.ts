import type { SnapshotMeta } from "../raft/types.js";

/**
 * What the state machine offers the snapshot store: a consistent copy of its database, taken at an
 * applied index. Implemented with SQLite's online backup (`db.backup(targetPath)`) or
 * `VACUUM INTO targetPath`, both of which read one consistent version while applies continue.
 */
export interface SnapshotSource {
  /**
   * Writes the copy to `targetPath` (which does not exist yet) and reports the index it reflects and
   * that entry's term. The file need not be fsynced: the snapshot store checksums it, fsyncs it and
   * renames it into place. A rejected promise leaves nothing behind that the store must keep.
   */
  createSnapshotFile(targetPath: string): Promise<{ index: number; term: number }>;
  /**
   * Makes the state durable as it stands now, everything applied committed and fsynced, and reports
   * the index it holds and that entry's term: the log may then be compacted behind that index with no
   * copy, since a crash, power loss included, reopens the state at least there.
   */
  durablePosition(): Promise<{ index: number; term: number }>;
}

/**
 * What the state machine does with a snapshot received from the leader, once the log store has made
 * it durable (so the driver calls this after the write carrying the snapshot resolves, and again at
 * start whenever the state machine's applied index is behind the log's snapshot index: a crash between
 * the two leaves exactly that).
 */
export interface SnapshotTarget {
  /**
   * Replaces the whole state machine by the database at `path`, atomically on its side (for example
   * copy to a temporary file, fsync, rename over its database, fsync the directory, reopen). The file
   * belongs to the snapshot store: read or copy it, never move, modify or delete it. Afterwards the
   * state machine's applied index is `meta.index`.
   */
  installSnapshotFile(path: string, meta: SnapshotMeta): Promise<void>;
}
