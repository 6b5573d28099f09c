import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";

/** Another process (or another voter in this one) holds the data directory: two voters on one log would corrupt it. */
export class DataDirLockedError extends Error {
  readonly code = "KeyLoadDataDirLocked";
  constructor(dir: string, holder: string) {
    super(`the data directory ${dir} is in use by ${holder}; stop it first`);
    this.name = new.target.name;
  }
}

const LOCK_FILE = "voter-lock.sqlite";
/**
 * The lock connections not yet released. A connection the garbage collector takes is closed, and its
 * lock with it: a caller that dropped the release function (a script, a test's holder) would lose
 * the directory at the next full collection, which Node 24 ran within two seconds of the start.
 */
const held = new Set<Database.Database>();
/** Who holds the lock, for the refusal's message only: the lock itself is the database's. */
const HOLDER_FILE = "voter.pid";

/**
 * Claims `dir` for this voter with an exclusive lock on a small SQLite database, held until release
 * (SQLite's `locking_mode=EXCLUSIVE` keeps the lock of `BEGIN EXCLUSIVE` for the connection's life). The
 * kernel drops that lock when the holding process dies, however it dies, and a reboot leaves none
 * behind, as etcd's flock on its WAL: a pid file would instead be mistaken for a live holder once a
 * dead voter's pid is reused, by any process after a reboot. SQLite also refuses a second
 * connection of this same process, so two voters started in one process on one directory are
 * refused too. The file is never deleted: a process opening it while another deletes and recreates
 * it would lock a different file. Returns the release function.
 */
export function lockDataDir(dir: string): () => void {
  const db = new Database(join(dir, LOCK_FILE), { timeout: 0 });
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    // The exclusive lock this takes outlives the transaction: in this locking mode it is never released.
    db.exec("BEGIN EXCLUSIVE");
    db.exec("COMMIT");
  } catch (err) {
    db.close();
    if ((err as { code?: unknown }).code === "SQLITE_BUSY") throw new DataDirLockedError(dir, holderOf(dir));
    throw err;
  }
  held.add(db);
  writeFileSync(join(dir, HOLDER_FILE), String(process.pid));
  return () => {
    held.delete(db);
    db.close();
  };
}

function holderOf(dir: string): string {
  try {
    const pid = Number.parseInt(readFileSync(join(dir, HOLDER_FILE), "utf8"), 10);
    if (Number.isSafeInteger(pid))
      return pid === process.pid ? "another voter in this process" : `process ${pid}`;
  } catch {
    // No holder file (yet): the message just says less.
  }
  return "another process";
}
