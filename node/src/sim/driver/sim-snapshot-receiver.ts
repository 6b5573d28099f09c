import { crc32c } from "../../checksum/crc32c.js";
import type { SnapshotMeta } from "../../raft/types.js";
import type { SnapshotFile } from "../../storage/snapshot-file-store.js";
import type { SnapshotChunkWriter } from "../../storage/snapshot-files.js";
import {
  SnapshotChunkOutOfOrderError,
  SnapshotMismatchError,
  StorageArgumentError,
} from "../../storage/storage-errors.js";

/** What the receiver does to its temporary file on the simulated disk. */
export interface SimTempFile {
  write(data: Uint8Array): void;
  seal(size: number, checksum: number): SnapshotFile;
  discard(): void;
}

/**
 * SnapshotReceiver's rules over a simulated temporary file: chunks in order at `receivedBytes`, none
 * beyond the announced size, and `finish` checks the size and the announced checksum before sealing,
 * deleting the file when they differ. Errors as the real one's, settling in a later microtask.
 */
export class SimSnapshotReceiver implements SnapshotChunkWriter {
  private received = 0;
  private crc = 0;
  private state: "receiving" | "finished" | "aborted" = "receiving";
  /** The first write that failed: as the real receiver's chained writes, every later one and the seal fail too. */
  private writeError: unknown = null;

  constructor(
    readonly meta: SnapshotMeta,
    readonly totalBytes: number,
    private readonly file: SimTempFile,
  ) {}

  get receivedBytes(): number {
    return this.received;
  }

  get checksum(): number {
    return this.crc;
  }

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
    // As the real receiver, order and checksum are settled before the write, whose failure only its
    // promise reports.
    this.received += data.byteLength;
    this.crc = crc32c(data, this.crc);
    if (this.writeError !== null) return Promise.reject(this.writeError);
    try {
      this.file.write(data);
    } catch (err) {
      this.writeError = err;
      return Promise.reject(err);
    }
    return Promise.resolve();
  }

  async finish(expectedChecksum?: number): Promise<SnapshotFile> {
    const closed = this.closedError();
    if (closed) throw closed;
    this.state = "finished";
    try {
      if (this.writeError !== null) throw this.writeError;
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
      return this.file.seal(this.received, this.crc);
    } catch (err) {
      this.file.discard();
      throw err;
    }
  }

  async abort(): Promise<void> {
    if (this.state !== "receiving") return;
    this.state = "aborted";
    this.file.discard();
  }

  private closedError(): StorageArgumentError | null {
    return this.state === "receiving"
      ? null
      : new StorageArgumentError(`the snapshot receiver for index ${this.meta.index} is ${this.state}`);
  }
}
