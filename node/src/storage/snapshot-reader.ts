import { crc32c } from "../checksum/crc32c.js";
import type { SnapshotFile } from "./snapshot-file-store.js";
import type { SnapshotChunkReader } from "./snapshot-files.js";
import { StorageArgumentError, StorageCorruptionError } from "./storage-errors.js";

/** What a reader reads from: an open file (a FileHandle), or the simulator's model of one. */
export interface ReadableChunkFile {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

/**
 * Streams one snapshot file in chunks without loading it whole. Its open handle keeps the file
 * readable after a newer snapshot supersedes and deletes it. A front-to-back pass is checksummed as it
 * goes: the chunk that completes it fails with StorageCorruptionError instead of handing out a
 * damaged end, so a corrupt snapshot is never sent whole to a follower.
 */
export class SnapshotReader implements SnapshotChunkReader {
  private verifiedTo = 0;
  private crc = 0;

  constructor(
    readonly snapshot: SnapshotFile,
    private readonly path: string,
    private readonly handle: ReadableChunkFile,
  ) {}

  /**
   * Up to `length` bytes from `offset` (fewer at the end of the file, none at or past it), read into
   * `into` when given (at least that long; a sender reuses its chunk buffers), else a new buffer.
   */
  async readChunk(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const size = this.snapshot.size;
    if (!Number.isSafeInteger(offset) || offset < 0 || offset > size) {
      throw new StorageArgumentError(`snapshot chunk offset ${offset} outside [0, ${size}]`);
    }
    if (!Number.isSafeInteger(length) || length < 0) {
      throw new StorageArgumentError(`snapshot chunk length must be a non-negative integer, got ${length}`);
    }
    const want = Math.min(length, size - offset);
    if (into !== undefined && into.byteLength < want) {
      throw new StorageArgumentError(`a buffer of ${into.byteLength} bytes cannot hold a chunk of ${want}`);
    }
    const buf = into === undefined ? new Uint8Array(want) : into.subarray(0, want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await this.handle.read(buf, got, want - got, offset + got);
      if (bytesRead === 0) {
        throw new StorageCorruptionError(
          this.path,
          this.snapshot.meta.index,
          `snapshot file ends at ${offset + got}, ${size} bytes recorded`,
        );
      }
      got += bytesRead;
    }
    if (offset === this.verifiedTo && want > 0) {
      this.crc = crc32c(buf, this.crc);
      this.verifiedTo += want;
      if (this.verifiedTo === size && this.crc !== this.snapshot.checksum) {
        throw new StorageCorruptionError(
          this.path,
          this.snapshot.meta.index,
          "snapshot file checksum mismatch",
        );
      }
    }
    return buf;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
