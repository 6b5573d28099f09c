import type { FileHandle } from "node:fs/promises";
import { crc32c } from "../checksum/crc32c.js";
import type { SnapshotMeta } from "../raft/types.js";
import type { SnapshotFile } from "./snapshot-file-store.js";
import type { SnapshotChunkWriter } from "./snapshot-files.js";
import {
  SnapshotChunkOutOfOrderError,
  SnapshotMismatchError,
  StorageArgumentError,
  StorageFailedError,
} from "./storage-errors.js";

/** Where the chunks go: an open file (a FileHandle), or the simulator's model of one. */
export interface ChunkFile {
  write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesWritten: number }>;
}

/** Makes a fully written temporary file the durable snapshot file (fsync, rename, fsync directory). */
export type SealSnapshot<H extends ChunkFile = FileHandle> = (
  handle: H,
  size: number,
  checksum: number,
) => Promise<SnapshotFile>;

/**
 * Receives a snapshot chunk by chunk into a temporary file. Chunks must arrive in order, each
 * starting where the received bytes end; nothing is visible under a snapshot name until `finish`
 * has checked the size (and the checksum, when the sender announced one) and sealed it.
 */
export class SnapshotReceiver<H extends ChunkFile = FileHandle> implements SnapshotChunkWriter {
  private received = 0;
  private crc = 0;
  /** Each write chains on the previous one, the first on the file's creation. */
  private writes: Promise<unknown>;
  private state: "receiving" | "finished" | "aborted" = "receiving";

  constructor(
    readonly meta: SnapshotMeta,
    readonly totalBytes: number,
    private readonly handle: Promise<H>,
    private readonly seal: SealSnapshot<H>,
    private readonly discard: () => Promise<void>,
  ) {
    this.writes = handle;
  }

  /** Bytes accepted so far: the offset the next chunk must start at. */
  get receivedBytes(): number {
    return this.received;
  }

  /** CRC-32C of the bytes accepted so far. */
  get checksum(): number {
    return this.crc;
  }

  /** Writes one chunk; resolves once it is in the temporary file (not yet durable). */
  write(offset: number, data: Uint8Array): Promise<void> {
    const closed = this.closedError();
    if (closed) return Promise.reject(closed);
    if (offset !== this.received)
      return Promise.reject(new SnapshotChunkOutOfOrderError(this.received, offset));
    if (offset + data.byteLength > this.totalBytes) {
      return Promise.reject(
        new SnapshotMismatchError(
          `snapshot chunk ends at ${offset + data.byteLength}, beyond the announced ${this.totalBytes} bytes`,
        ),
      );
    }
    // Order and checksum are settled now, so writes queued back to back stay correct.
    this.received += data.byteLength;
    this.crc = crc32c(data, this.crc);
    const write = this.writes.then(() => this.handle.then((h) => writeFully(h, data, offset)));
    this.writes = write;
    return write.then(() => undefined);
  }

  /** Seals the received snapshot; `expectedChecksum` is the CRC-32C the sender announced, if any. */
  async finish(expectedChecksum?: number): Promise<SnapshotFile> {
    const closed = this.closedError();
    if (closed) throw closed;
    this.state = "finished";
    try {
      await this.writes;
      if (this.received !== this.totalBytes) {
        throw new SnapshotMismatchError(
          `snapshot holds ${this.received} of ${this.totalBytes} announced bytes`,
        );
      }
      if (expectedChecksum !== undefined && expectedChecksum !== this.crc) {
        throw new SnapshotMismatchError(
          `snapshot checksum ${this.crc.toString(16)} differs from the announced ${expectedChecksum.toString(16)}`,
        );
      }
      return await this.seal(await this.handle, this.received, this.crc);
    } catch (err) {
      await this.discard();
      throw err;
    }
  }

  /** Drops what was received; the temporary file is deleted. */
  async abort(): Promise<void> {
    if (this.state !== "receiving") return;
    this.state = "aborted";
    await this.writes.catch(() => undefined);
    await this.discard();
  }

  private closedError(): StorageArgumentError | null {
    return this.state === "receiving"
      ? null
      : new StorageArgumentError(`the snapshot receiver for index ${this.meta.index} is ${this.state}`);
  }
}

/**
 * Writes all of `data` at `offset`. A write may take fewer bytes than asked (a disk nearly full),
 * and the rest, not written, would leave a hole the received checksum knows nothing of.
 */
async function writeFully(handle: ChunkFile, data: Uint8Array, offset: number): Promise<void> {
  for (let done = 0; done < data.byteLength; ) {
    const { bytesWritten } = await handle.write(data, done, data.byteLength - done, offset + done);
    if (bytesWritten <= 0) {
      throw new StorageFailedError(`a snapshot chunk's write at ${offset + done} wrote nothing`);
    }
    done += bytesWritten;
  }
}
