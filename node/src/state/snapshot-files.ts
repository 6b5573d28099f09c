import { copyFileSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { InvalidArgumentError } from "@keyload/contract";
import Database from "better-sqlite3";
import { fsyncPath } from "../fs/fsync.js";
import { type AppliedPosition, readMeta } from "./database.js";
import { SCHEMA_VERSION } from "./schema.js";
import { isMigratable } from "./schema-migration.js";

/**
 * Reads the applied position a snapshot file covers, refusing a file that is not an intact state
 * database of a schema this voter reads, so a bad snapshot never replaces good state. An older schema
 * it can migrate is taken: the database migrates when it reopens, as a voter's own does after an
 * upgrade. A snapshot taken before the cluster was upgraded, still the log's current one, would
 * otherwise be refused at every install and every start, and the voter could never catch up.
 */
export function inspectSnapshot(path: string): AppliedPosition {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw badSnapshot(path, "it cannot be opened", error);
  }
  try {
    const check = db.pragma("quick_check", { simple: true });
    if (check !== "ok") throw badSnapshot(path, `quick_check says ${String(check)}`);
    const meta = readMeta(db);
    const version = meta.schema_version;
    if (version !== SCHEMA_VERSION && !isMigratable(version)) throw badSnapshot(path, `schema ${version}`);
    return { index: meta.applied_index, term: meta.applied_term };
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw error;
    throw badSnapshot(path, "it is not a state database", error);
  } finally {
    db.close();
  }
}

/**
 * Replaces the closed database at `dbPath` with a copy of `snapshotPath`: copy beside it, fsync, rename
 * over, fsync the directory. A crash before the rename leaves the old database whole, after it the new.
 * The old WAL goes first (the caller checkpointed it into the database before closing), since SQLite
 * would otherwise replay it onto the new file; the directory is fsynced between, so no power loss can
 * keep the rename and lose the deletion.
 */
export function replaceDatabaseFile(dbPath: string, snapshotPath: string): void {
  const staging = stagingPath(dbPath);
  copyFileSync(snapshotPath, staging);
  fsyncPath(staging);
  rmSync(`${dbPath}-wal`, { force: true });
  rmSync(`${dbPath}-shm`, { force: true });
  fsyncPath(dirname(dbPath));
  renameSync(staging, dbPath);
  fsyncPath(dirname(dbPath));
}

/**
 * Deletes the copy an install interrupted by a crash left beside the database (the database itself is
 * then still the old one); called at open, so a failed install does not keep a snapshot's worth of disk.
 */
export function removeInterruptedInstall(dbPath: string): void {
  rmSync(stagingPath(dbPath), { force: true });
}

function stagingPath(dbPath: string): string {
  return `${dbPath}.installing`;
}

function badSnapshot(path: string, why: string, cause?: unknown): InvalidArgumentError {
  return new InvalidArgumentError(`${path} is not a usable state snapshot: ${why}`, {
    reason: "InvalidSnapshot",
    ...(cause === undefined ? {} : { cause }),
  });
}
