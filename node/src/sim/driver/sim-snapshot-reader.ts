import { crc32c } from "../../checksum/crc32c.js";
import type { SnapshotFile } from "../../storage/snapshot-file-store.js";
import type { SnapshotChunkReader } from "../../storage/snapshot-files.js";
import { StorageArgumentError, StorageCorruptionError } from "../../storage/storage-errors.js";

/**
 * SnapshotReader over bytes held in memory: the same argument checks, and the same checksum over a
 * front-to-back pass, whose last chunk fails rather than hand out a damaged file's end.
 */
export class SimSnapshotReader implements SnapshotChunkReader {
  private verifiedTo = 0;
  private crc = 0;

  constructor(
    readonly snapshot: SnapshotFile,
    private readonly path: string,
    private readonly bytes: Uint8Array,
  ) {}

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
    if (offset + want > this.bytes.byteLength) {
      throw new StorageCorruptionError(
        this.path,
        this.snapshot.meta.index,
        `snapshot file ends at ${this.bytes.byteLength}, ${size} bytes recorded`,
      );
    }
    const buf = into === undefined ? new Uint8Array(want) : into.subarray(0, want);
    buf.set(this.bytes.subarray(offset, offset + want));
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

  async close(): Promise<void> {}
}
