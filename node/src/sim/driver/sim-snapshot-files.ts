import { crc32c } from "../../checksum/crc32c.js";
import type { SnapshotMeta } from "../../raft/types.js";
import type { SnapshotFile } from "../../storage/snapshot-file-store.js";
import type { SnapshotChunkReader, SnapshotFiles } from "../../storage/snapshot-files.js";
import { StorageArgumentError, StorageCorruptionError } from "../../storage/storage-errors.js";
import { SimFileMissingError, type SimLogDisk, simSnapshotPath } from "./sim-log-disk.js";
import { SimSnapshotReader } from "./sim-snapshot-reader.js";
import { SimSnapshotReceiver } from "./sim-snapshot-receiver.js";

/**
 * SnapshotFileStore over a SimLogDisk, for one process life: temporary files named by a counter, sealed
 * under names never used before, the same argument checks and errors. Its promises settle in a later
 * microtask, never on the real clock.
 */
export class SimSnapshotFiles implements SnapshotFiles {
  constructor(
    private readonly disk: SimLogDisk,
    private readonly life: number,
  ) {}

  /** Set by `failWrites`: every later write of a received snapshot's chunk fails with it (an EIO). */
  private writeFault: Error | null = null;

  failWrites(err: Error): void {
    this.writeFault = err;
  }

  tempPath(): string {
    this.disk.checkLife(this.life);
    return this.disk.newTempPath();
  }

  receive(meta: SnapshotMeta, totalBytes: number): SimSnapshotReceiver {
    checkMeta(meta);
    if (!Number.isSafeInteger(totalBytes) || totalBytes < 0) {
      throw new StorageArgumentError(`snapshot size must be a non-negative integer, got ${totalBytes}`);
    }
    const temp = this.tempPath();
    // Created empty at once, as the real one opens its file: a crash before the first chunk loses it too.
    this.disk.appendTemp(temp, new Uint8Array(0));
    return new SimSnapshotReceiver(meta, totalBytes, {
      write: (data) => {
        this.disk.checkLife(this.life);
        if (this.writeFault !== null) throw this.writeFault;
        this.disk.appendTemp(temp, data);
      },
      seal: (size, checksum) => this.seal(temp, meta, size, checksum),
      discard: () => {
        if (this.disk.isLive(this.life)) this.disk.removeTemp(temp);
      },
    });
  }

  async discardTemp(tempPath: string): Promise<void> {
    this.disk.checkLife(this.life);
    this.disk.removeTemp(tempPath);
  }

  async adopt(tempPath: string, meta: SnapshotMeta): Promise<SnapshotFile> {
    checkMeta(meta);
    this.disk.checkLife(this.life);
    if (!this.disk.hasTemp(tempPath)) throw new SimFileMissingError(tempPath);
    const bytes = this.disk.readFile(tempPath);
    return this.seal(tempPath, meta, bytes.byteLength, crc32c(bytes));
  }

  async openReader(snap: SnapshotFile): Promise<SnapshotChunkReader> {
    this.disk.checkLife(this.life);
    const path = simSnapshotPath(snap.file);
    const bytes = this.disk.sealedFile(snap.file);
    if (bytes === undefined) {
      throw new StorageCorruptionError(
        path,
        snap.meta.index,
        "the snapshot file the log refers to is missing",
      );
    }
    // The reader holds the bytes, as an open handle keeps a file deleted meanwhile readable.
    return new SimSnapshotReader(snap, path, bytes);
  }

  private seal(tempPath: string, meta: SnapshotMeta, size: number, checksum: number): SnapshotFile {
    this.disk.checkLife(this.life);
    const file = this.disk.newSnapshotName(meta.index, meta.term);
    this.disk.seal(tempPath, file);
    return { meta, file, size, checksum };
  }
}

function checkMeta(meta: SnapshotMeta): void {
  if (
    !Number.isSafeInteger(meta.index) ||
    meta.index < 1 ||
    !Number.isSafeInteger(meta.term) ||
    meta.term < 1
  ) {
    throw new StorageArgumentError(
      `snapshot index and term must be positive integers, got ${meta.index}/${meta.term}`,
    );
  }
}
