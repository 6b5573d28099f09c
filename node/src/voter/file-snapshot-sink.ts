import type { SnapshotChunkSink } from "../raft/snapshot-inbox.js";
import type { SnapshotFile } from "../storage/snapshot-file-store.js";
import type { SnapshotChunkWriter } from "../storage/snapshot-files.js";

/**
 * A snapshot received from the leader into a temporary file (SnapshotReceiver), as the inbox's sink.
 * Chunks are written in the background, in order; a failed write surfaces when the snapshot is sealed.
 */
export class FileSnapshotSink implements SnapshotChunkSink {
  /** Chunks written so far. */
  chunks = 0;
  /** Set once abandoned: its writes then fail as they should. */
  aborted = false;
  private lastWrite: Promise<void> = Promise.resolve();

  constructor(private readonly receiver: SnapshotChunkWriter) {}

  get receivedBytes(): number {
    return this.receiver.receivedBytes;
  }

  get checksum(): number {
    return this.receiver.checksum;
  }

  write(offset: number, data: Uint8Array): void {
    this.chunks++;
    // `seal` awaits the same chain of writes and rethrows its failure.
    this.lastWrite = this.receiver.write(offset, data);
    this.lastWrite.catch(() => undefined);
  }

  /** Settles once every chunk so far is in the file; rejects if one of their writes failed. */
  written(): Promise<void> {
    return this.lastWrite;
  }

  abort(): void {
    this.aborted = true;
    this.receiver.abort().catch(() => undefined);
  }

  /**
   * Makes the received snapshot durable under its own name once every chunk is written and the whole
   * file matches `checksum`; a temporary file that does not is deleted and the promise rejects.
   */
  seal(checksum: number): Promise<SnapshotFile> {
    return this.receiver.finish(checksum);
  }
}
