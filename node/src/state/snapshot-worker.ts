/**
 * The snapshot worker's entry point: copies the state database from its own read-only connection, one
 * copy at a time, in the order asked. See SnapshotCopier.
 */
import { closeSync, existsSync, fdatasyncSync, openSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import { InternalError, InvalidArgumentError, KeyLoadError } from "@keyload/contract";
import Database from "better-sqlite3";
import { fsyncPath } from "../fs/fsync.js";
import { pageBytesOf } from "../fs/sqlite-limits.js";
import { lowerThreadPriority } from "./background-priority.js";
import type { AppliedPosition } from "./database.js";
import { inspectSnapshot } from "./snapshot-files.js";
import type { SnapshotCopyReply, SnapshotCopyRequest } from "./snapshot-protocol.js";

const port = parentPort!;
lowerThreadPriority();

/**
 * Bytes per backup step, 2 MiB: 512 pages of 4 KiB, 128 of 16 KiB (STATE_PAGE_BYTES). After each step
 * the copy written so far is fdatasynced, so the disk takes it in small pieces. In one step, the whole
 * copy reached the disk in the backup's final commit, and every other fsync on the disk (each voter's
 * log journal) waited behind it (docs/decisions/0015-background-snapshot-copies.md).
 */
const STEP_BYTES = 2 * 1024 * 1024;

async function copy(request: SnapshotCopyRequest): Promise<SnapshotCopyReply> {
  const db = new Database(request.source, { readonly: true, fileMustExist: true });
  let target: number | null = null;
  try {
    // A read transaction held across the steps keeps the copy at one state of the database. Without
    // it each step reads afresh, and SQLite restarts a backup whenever another connection (the
    // applying thread's) commits between two steps; in WAL mode the reader never blocks that writer.
    db.exec("BEGIN");
    db.prepare("SELECT count(*) FROM sqlite_master").pluck().get();
    const stepPages = Math.max(1, Math.floor(STEP_BYTES / pageBytesOf(db)));
    await db.backup(request.target, {
      progress: () => {
        target ??= existsSync(request.target) ? openSync(request.target, "r") : null;
        if (target !== null) fdatasyncSync(target);
        return stepPages;
      },
    });
  } finally {
    if (target !== null) closeSync(target);
    db.close();
  }
  // The copy's header still says WAL, as the source's does, and every read-only open of it (the check
  // below, a follower's install) would then leave -wal and -shm files beside it that nothing removes:
  // in rollback-journal mode it is one self-contained file.
  const copy = new Database(request.target, { fileMustExist: true });
  try {
    copy.pragma("journal_mode = DELETE");
  } finally {
    copy.close();
  }
  fsyncPath(request.target);
  const covered = checkedCopy(request.target, request.source);
  // The log may be compacted up to `covered` once this resolves, so the database must not still rely
  // on those entries: every apply the copy holds committed before the copy began, into the WAL or (a
  // checkpoint) the database file, and fsyncing both makes them durable without the checkpoint that
  // would hold the applying thread's writes back.
  const wal = `${request.source}-wal`;
  try {
    if (existsSync(wal)) fsyncPath(wal);
    fsyncPath(request.source);
  } catch (cause) {
    // The live state's fsync, not the copy's: its dirty pages may be lost with the error reported once,
    // so the applying thread must stop the voter rather than retry (StateMachine.createSnapshot).
    throw new InternalError(`fsync of the applied state failed: ${String(cause)}`, {
      reason: "StateSyncFailed",
    });
  }
  return { id: request.id, ok: true, index: covered.index, term: covered.term };
}

/**
 * The position the copy covers, once its pages pass the check an install makes. The copy is made only
 * for a follower that needs one (docs/decisions/0021-lazy-snapshots.md), so the walk over every page
 * costs a second of this low-priority thread per tens of megabytes, now and then. The backup copies
 * pages as they are: a copy that fails holds a page of the applied state gone bad on the disk, which
 * the voter's own reads may never touch, and a follower installing it would be left with no usable
 * state. The voter must stop.
 */
function checkedCopy(target: string, source: string): AppliedPosition {
  try {
    return inspectSnapshot(target);
  } catch (cause) {
    if (!(cause instanceof InvalidArgumentError)) throw cause;
    throw new InternalError(`the applied state ${source} is damaged: its copy fails: ${cause.message}`, {
      reason: "CorruptState",
    });
  }
}

let queue: Promise<void> = Promise.resolve();
port.on("message", (request: SnapshotCopyRequest) => {
  queue = queue.then(async () => {
    let reply: SnapshotCopyReply;
    try {
      reply = await copy(request);
    } catch (error) {
      reply = {
        id: request.id,
        ok: false,
        message: error instanceof Error ? error.message : String(error),
        reason: error instanceof KeyLoadError ? error.reason : null,
      };
    }
    port.postMessage(reply);
  });
});
