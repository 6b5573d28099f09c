/**
 * The snapshot worker's entry point: copies the state database from its own read-only connection, one
 * copy at a time, in the order asked. See SnapshotCopier.
 */
import { existsSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import { KeyLoadError } from "@keyload/contract";
import Database from "better-sqlite3";
import { fsyncPath } from "../fs/fsync.js";
import { inspectSnapshot } from "./snapshot-files.js";
import type { SnapshotCopyReply, SnapshotCopyRequest } from "./snapshot-protocol.js";

const port = parentPort!;

/**
 * Pages per backup step: all of them. The applying thread writes through another connection, and an
 * online backup restarts whenever such a write lands between two of its steps; a single step copies
 * the whole database under one read transaction, which in WAL mode never blocks that writer.
 */
const ALL_PAGES = 0x7fffffff;

async function copy(request: SnapshotCopyRequest): Promise<SnapshotCopyReply> {
  const db = new Database(request.source, { readonly: true, fileMustExist: true });
  try {
    await db.backup(request.target, { progress: () => ALL_PAGES });
  } finally {
    db.close();
  }
  fsyncPath(request.target);
  const covered = inspectSnapshot(request.target);
  // The log may be compacted up to `covered` once this resolves, so the database must not still rely
  // on those entries: every apply the copy holds committed before the copy began, into the WAL or (a
  // checkpoint) the database file, and fsyncing both makes them durable without the checkpoint that
  // would hold the applying thread's writes back.
  const wal = `${request.source}-wal`;
  if (existsSync(wal)) fsyncPath(wal);
  fsyncPath(request.source);
  return { id: request.id, ok: true, index: covered.index, term: covered.term };
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
