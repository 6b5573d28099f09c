import { randomUUID } from "node:crypto";
import { closeSync, openSync, readdirSync, readSync, statSync, unlinkSync } from "node:fs";
import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { crc32c } from "../checksum/crc32c.js";
import { fsyncPath, fsyncPathAsync } from "../fs/fsync.js";
import { makePrivateDir } from "../fs/private-dir.js";
import type { SnapshotMeta } from "../raft/types.js";
import type { FaultHook } from "./fault-hook.js";
import { checkSnapshotMeta, checkSnapshotToReceive } from "./snapshot-arguments.js";
import type { SnapshotFiles } from "./snapshot-files.js";
import { SnapshotReader } from "./snapshot-reader.js";
import { SnapshotReceiver } from "./snapshot-receiver.js";
import { StorageCorruptionError, StorageFailedError } from "./storage-errors.js";

const VERIFY_CHUNK_BYTES = 1024 * 1024;

/** A sealed snapshot file: immutable from the moment it got its name. */
export interface SnapshotFile {
  readonly meta: SnapshotMeta;
  /** Its name within the snapshot directory. */
  readonly file: string;
  readonly size: number;
  /** CRC-32C of the whole file. */
  readonly checksum: number;
}

const SNAPSHOT_NAME = /^snap-\d{20}-\d+-[0-9a-f]{8}\.sqlite$/;
const TEMP_NAME = /^tmp-[0-9a-f-]{36}\.part$/;
/**
 * What SQLite leaves beside a database it opened: snapshot files before rollback-journal copies were
 * opened read-only in WAL mode, which left an empty -wal and a -shm behind.
 */
const SQLITE_SIBLINGS = ["-wal", "-shm", "-journal"] as const;

function isOurs(name: string): boolean {
  const suffix = SQLITE_SIBLINGS.find((s) => name.endsWith(s));
  const base = suffix === undefined ? name : name.slice(0, -suffix.length);
  return SNAPSHOT_NAME.test(base) || TEMP_NAME.test(base);
}
const READ_BLOCK = 1 << 20;

/**
 * The snapshot files of one data directory. A snapshot is written under a temporary name, fsynced,
 * renamed to a name no other file ever had (index, term and a random tag) and the directory fsynced;
 * only then may the log refer to it. A crash at any step leaves at worst an unreferenced file, which
 * the next open deletes, while the snapshot the log refers to is untouched. The metadata (index, term,
 * conf, size, checksum) lives in the log database, committed atomically with the log change it
 * belongs to.
 */
export class SnapshotFileStore implements SnapshotFiles {
  private constructor(
    readonly dir: string,
    private readonly hook: FaultHook | undefined,
  ) {}

  static open(dir: string, hook?: FaultHook): SnapshotFileStore {
    makePrivateDir(dir);
    return new SnapshotFileStore(dir, hook);
  }

  path(file: string): string {
    return join(this.dir, file);
  }

  /** A fresh temporary path in the snapshot directory, for a SnapshotSource to write into. */
  tempPath(): string {
    return join(this.dir, `tmp-${randomUUID()}.part`);
  }

  /**
   * Starts receiving a snapshot of `totalBytes` bytes chunk by chunk, into a temporary file that is
   * being created: chunks can be written at once, they wait for it.
   */
  receive(meta: SnapshotMeta, totalBytes: number): SnapshotReceiver {
    checkSnapshotToReceive(meta, totalBytes);
    const temp = this.tempPath();
    const handle = open(temp, "wx");
    // A failure to create it surfaces at the first write or at finish.
    handle.catch(() => undefined);
    return new SnapshotReceiver(
      meta,
      totalBytes,
      handle,
      (h, size, checksum) => this.seal(temp, h, meta, size, checksum),
      () =>
        handle.then(
          (h) => discard(temp, h),
          () => undefined,
        ),
    );
  }

  /** Writes a snapshot given whole (small ones, in tests) to its durable file. */
  async store(meta: SnapshotMeta, data: Uint8Array): Promise<SnapshotFile> {
    const receiver = this.receive(meta, data.byteLength);
    try {
      await receiver.write(0, data);
    } catch (err) {
      await receiver.abort();
      throw err;
    }
    return receiver.finish();
  }

  async discardTemp(tempPath: string): Promise<void> {
    await rm(tempPath, { force: true });
  }

  /** Seals the file a SnapshotSource wrote at `tempPath` (from `tempPath()`), checksumming it first. */
  async adopt(tempPath: string, meta: SnapshotMeta): Promise<SnapshotFile> {
    checkSnapshotMeta(meta);
    const handle = await open(tempPath, "r+");
    try {
      const buf = Buffer.allocUnsafe(READ_BLOCK);
      let size = 0;
      let checksum = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, 0, READ_BLOCK, size);
        if (bytesRead === 0) break;
        checksum = crc32c(buf.subarray(0, bytesRead), checksum);
        size += bytesRead;
      }
      return await this.seal(tempPath, handle, meta, size, checksum);
    } catch (err) {
      await discard(tempPath, handle);
      throw err;
    }
  }

  /** Reads the whole file in chunks and checks it against its recorded size and checksum. */
  verify(snap: SnapshotFile): void {
    const path = this.path(snap.file);
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (err) {
      throw missingOrFailed(path, snap, err);
    }
    const buf = Buffer.allocUnsafe(VERIFY_CHUNK_BYTES);
    let size = 0;
    let checksum = 0;
    try {
      for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) {
        checksum = crc32c(buf.subarray(0, n), checksum);
        size += n;
      }
    } finally {
      closeSync(fd);
    }
    checkContents(path, snap, size, checksum);
  }

  /** Opens the snapshot for streaming; the reader keeps it readable even if a newer one replaces it. */
  async openReader(snap: SnapshotFile): Promise<SnapshotReader> {
    const path = this.path(snap.file);
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (err) {
      throw missingOrFailed(path, snap, err);
    }
    return new SnapshotReader(snap, path, handle);
  }

  /** Checks at open that the referenced file exists with its recorded size (the checksum is checked on read). */
  check(snap: SnapshotFile): void {
    const path = this.path(snap.file);
    let size: number;
    try {
      size = statSync(path).size;
    } catch (err) {
      throw missingOrFailed(path, snap, err);
    }
    checkContents(path, snap, size, null);
  }

  /** Deletes a superseded snapshot file, with anything SQLite left beside it. */
  async remove(file: string): Promise<void> {
    await rm(this.path(file), { force: true });
    for (const suffix of SQLITE_SIBLINGS) await rm(this.path(file + suffix), { force: true });
  }

  /**
   * Deletes every temporary or snapshot file but `keep`: leftovers of writes a crash interrupted and
   * snapshots superseded before their deletion, and what SQLite left beside any of them (`keep`
   * included). Run at open, before anything new is written.
   */
  removeAllBut(keep: string | null): void {
    let removed = false;
    for (const name of readdirSync(this.dir)) {
      if (name === keep || !isOurs(name)) continue;
      if (!removed) this.hook?.("snapshots-clearing");
      unlinkSync(this.path(name));
      removed = true;
    }
    if (removed) fsyncPath(this.dir);
  }

  private async seal(
    tempPath: string,
    handle: FileHandle,
    meta: SnapshotMeta,
    size: number,
    checksum: number,
  ): Promise<SnapshotFile> {
    this.hook?.("snapshot-temp-written");
    await handle.datasync();
    this.hook?.("snapshot-temp-synced");
    await handle.close();
    const file = `snap-${String(meta.index).padStart(20, "0")}-${meta.term}-${randomUUID().slice(0, 8)}.sqlite`;
    await rename(tempPath, this.path(file));
    try {
      this.hook?.("snapshot-renamed");
      await fsyncPathAsync(this.dir);
      this.hook?.("snapshot-dir-synced");
    } catch (err) {
      // The caller's cleanup knows only the temporary name: without this, each retry would leave a
      // full copy of the state behind until the next open.
      await rm(this.path(file), { force: true }).catch(() => undefined);
      throw err;
    }
    return { meta, file, size, checksum };
  }
}

async function discard(path: string, handle: FileHandle): Promise<void> {
  // The handle may already be closed when sealing failed after closing it.
  await handle.close().catch(() => undefined);
  await rm(path, { force: true });
}

function missingOrFailed(path: string, snap: SnapshotFile, err: unknown): Error {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") {
    return new StorageCorruptionError(
      path,
      snap.meta.index,
      "the snapshot file the log refers to is missing",
    );
  }
  return new StorageFailedError(`${path}: ${(err as Error).message}`, { cause: err });
}

/** Throws unless the file's size, and its checksum when one was computed, are the recorded ones. */
function checkContents(path: string, snap: SnapshotFile, size: number, checksum: number | null): void {
  if (size !== snap.size) {
    throw new StorageCorruptionError(
      path,
      snap.meta.index,
      `snapshot file holds ${size} bytes, ${snap.size} recorded`,
    );
  }
  if (checksum !== null && checksum !== snap.checksum) {
    throw new StorageCorruptionError(path, snap.meta.index, "snapshot file checksum mismatch");
  }
}
