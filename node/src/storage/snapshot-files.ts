import type { SnapshotMeta } from "../raft/types.js";
import type { SnapshotFile } from "./snapshot-file-store.js";

/** A snapshot being received chunk by chunk into a temporary file (SnapshotReceiver on disk). */
export interface SnapshotChunkWriter {
  /** Bytes accepted so far: the offset the next chunk must start at. */
  readonly receivedBytes: number;
  /** CRC-32C of the bytes accepted so far. */
  readonly checksum: number;
  /** Writes one chunk; resolves once it is in the temporary file (not yet durable). */
  write(offset: number, data: Uint8Array): Promise<void>;
  /**
   * Makes the file durable under its own name once every chunk is written and the whole matches
   * `expectedChecksum` (when given); a file that does not is deleted and the promise rejects.
   */
  finish(expectedChecksum?: number): Promise<SnapshotFile>;
  /** Deletes the temporary file; later writes fail. */
  abort(): Promise<void>;
}

/** A sealed snapshot opened for streaming; it stays readable while a newer one replaces it. */
export interface SnapshotChunkReader {
  /** The bytes at [offset, offset + length), into `into` when given and large enough. */
  readChunk(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  close(): Promise<void>;
}

/**
 * What the log's writer, a voter's driver and its snapshot sender need of the snapshot files:
 * SnapshotFileStore on disk, an in-memory model in the simulator.
 */
export interface SnapshotFiles {
  /** A fresh temporary path, for a SnapshotSource to write a copy of the state into. */
  tempPath(): string;
  /** Starts receiving a snapshot of `totalBytes` bytes chunk by chunk. */
  receive(meta: SnapshotMeta, totalBytes: number): SnapshotChunkWriter;
  /** Deletes a temporary file a SnapshotSource wrote and nothing sealed; absent already is fine. */
  discardTemp(tempPath: string): Promise<void>;
  /** Seals the file a SnapshotSource wrote at `tempPath`, checksumming it first. */
  adopt(tempPath: string, meta: SnapshotMeta): Promise<SnapshotFile>;
  openReader(snap: SnapshotFile): Promise<SnapshotChunkReader>;
}
