import { crc32c } from "../../checksum/crc32c.js";
import type { SnapshotMeta } from "../../raft/types.js";
import { checkSnapshotMeta, checkSnapshotToReceive } from "../../storage/snapshot-arguments.js";
import type { SnapshotFile } from "../../storage/snapshot-file-store.js";
import type { SnapshotChunkReader, SnapshotFiles } from "../../storage/snapshot-files.js";
import { type ReadableChunkFile, SnapshotReader } from "../../storage/snapshot-reader.js";
import { type ChunkFile, SnapshotReceiver } from "../../storage/snapshot-receiver.js";
import { StorageCorruptionError } from "../../storage/storage-errors.js";
import { SimFileMissingError, type SimLogDisk, simSnapshotPath } from "./sim-log-disk.js";

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

  /** The production receiver, writing into a temporary file of the simulated disk. */
  receive(meta: SnapshotMeta, totalBytes: number): SnapshotReceiver<ChunkFile> {
    checkSnapshotToReceive(meta, totalBytes);
    const temp = this.tempPath();
    // Created empty at once, as the real one opens its file: a crash before the first chunk loses it too.
    this.disk.appendTemp(temp, new Uint8Array(0));
    const file: ChunkFile = {
      write: async (buffer, offset, length) => {
        this.disk.checkLife(this.life);
        if (this.writeFault !== null) throw this.writeFault;
        // The receiver writes each chunk at the end of what it wrote before.
        this.disk.appendTemp(temp, buffer.subarray(offset, offset + length));
        return { bytesWritten: length };
      },
    };
    return new SnapshotReceiver(
      meta,
      totalBytes,
      Promise.resolve(file),
      async (_file, size, checksum) => this.seal(temp, meta, size, checksum),
      async () => {
        if (this.disk.isLive(this.life)) this.disk.removeTemp(temp);
      },
    );
  }

  async discardTemp(tempPath: string): Promise<void> {
    this.disk.checkLife(this.life);
    this.disk.removeTemp(tempPath);
  }

  async adopt(tempPath: string, meta: SnapshotMeta): Promise<SnapshotFile> {
    checkSnapshotMeta(meta);
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
    const file: ReadableChunkFile = {
      read: async (buffer, offset, length, position) => {
        const n = Math.max(0, Math.min(length, bytes.byteLength - position));
        buffer.set(bytes.subarray(position, position + n), offset);
        return { bytesRead: n };
      },
      close: async () => undefined,
    };
    return new SnapshotReader(snap, path, file);
  }

  private seal(tempPath: string, meta: SnapshotMeta, size: number, checksum: number): SnapshotFile {
    this.disk.checkLife(this.life);
    const file = this.disk.newSnapshotName(meta.index, meta.term);
    this.disk.seal(tempPath, file);
    return { meta, file, size, checksum };
  }
}
