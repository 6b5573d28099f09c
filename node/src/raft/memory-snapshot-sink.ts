import { crc32c } from "../checksum/crc32c.js";
import { RaftInvariantError } from "./errors.js";
import type { MemoryStorage } from "./memory-storage.js";
import type { SnapshotChunkSink } from "./snapshot-inbox.js";
import type { SnapshotChunkMessage } from "./types.js";

/**
 * A snapshot received into memory: the simulator's and the core tests' stand-in for the temporary
 * file a voter writes (a MemoryStorage holds its snapshot's bytes anyway).
 */
export class MemorySnapshotSink implements SnapshotChunkSink {
  private chunks: Uint8Array[] = [];
  private received = 0;
  private crc = 0;
  aborted = false;

  get receivedBytes(): number {
    return this.received;
  }

  get checksum(): number {
    return this.crc;
  }

  write(offset: number, data: Uint8Array): void {
    if (this.aborted) throw new RaftInvariantError("write to an aborted snapshot sink");
    if (offset !== this.received) {
      throw new RaftInvariantError(`snapshot chunk at ${offset}, ${this.received} bytes received`);
    }
    this.chunks.push(data);
    this.received += data.byteLength;
    this.crc = crc32c(data, this.crc);
  }

  abort(): void {
    this.aborted = true;
    this.chunks = [];
  }

  /** The bytes received, in one piece. */
  bytes(): Uint8Array {
    const out = new Uint8Array(this.received);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.byteLength;
    }
    return out;
  }
}

/**
 * `m` with its bytes, read from the sender's storage as a voter reads them from its snapshot file;
 * null when that storage no longer holds the chunk's snapshot (the message is then lost, and the
 * core moves the transfer to the newer snapshot when it rewinds).
 */
export function fillChunkFromMemory(
  storage: MemoryStorage,
  m: SnapshotChunkMessage,
): SnapshotChunkMessage | null {
  const snap = storage.snapshot();
  if (snap.meta.index !== m.meta.index || snap.meta.term !== m.meta.term || snap.checksum !== m.checksum) {
    return null;
  }
  return { ...m, data: storage.snapshotData().subarray(m.offset, m.offset + m.length) };
}
