import type { NodeId, SnapshotChunkMessage, SnapshotMeta } from "../raft/types.js";
import type { LogStore } from "../storage/log-store.js";
import type { SnapshotChunkReader } from "../storage/snapshot-files.js";

/** Enough for a follower's window of chunks in flight, and a few more. */
const MAX_SPARE_BUFFERS = 16;

/** One follower's snapshot transfer: the file it streams from, and its chunks in sending order. */
interface Stream {
  readonly meta: SnapshotMeta;
  readonly reader: Promise<SnapshotChunkReader | null>;
  /** Each chunk is read and sent after the previous one, so a follower gets them in order. */
  queue: Promise<void>;
  closed: boolean;
}

/**
 * The leader's side of a streamed snapshot: the core emits chunks without bytes, and this reads each
 * one's bytes from the snapshot file, off the event loop, just before sending it, so no more of a
 * snapshot is in memory than the chunks the core's flow control lets fly. A reader is opened per
 * follower when its transfer starts and holds the file open, so a newer snapshot replacing it does not
 * cut the transfer short; a chunk of a snapshot the store no longer holds when its transfer would
 * start is dropped, as a lost message, and the core moves the transfer to the newer snapshot.
 */
export class SnapshotSender {
  private readonly streams = new Map<NodeId, Stream>();
  /**
   * Chunk buffers the transport is done with, reused: a new buffer per chunk made V8 collect its
   * whole heap every few dozen chunks, for the memory outside it
   * (docs/decisions/0001-streamed-snapshots.md).
   */
  private readonly spare: Uint8Array[] = [];

  constructor(
    private readonly store: LogStore,
    /** Sends `m`; calls `released` once its bytes are no longer referenced (written or dropped). */
    private readonly deliver: (m: SnapshotChunkMessage, released: () => void) => void,
    /** A read failed: the snapshot file is damaged or unreadable (the leader must stop). */
    private readonly onFailure: (err: unknown) => void,
  ) {}

  /** Reads `m`'s bytes and hands it to `deliver`, after every chunk sent to the same follower before. */
  send(m: SnapshotChunkMessage): void {
    let stream = this.streams.get(m.to);
    if (stream === undefined || stream.meta.index !== m.meta.index || stream.meta.term !== m.meta.term) {
      if (stream !== undefined) this.close(m.to);
      stream = { meta: m.meta, reader: this.openReader(m.meta), queue: Promise.resolve(), closed: false };
      this.streams.set(m.to, stream);
    }
    const s = stream;
    s.queue = s.queue
      .then(async () => {
        const reader = await s.reader;
        if (reader === null || s.closed) return;
        const buffer = this.take(m.length);
        let data: Uint8Array;
        try {
          data = await reader.readChunk(m.offset, m.length, buffer);
        } catch (err) {
          this.give(buffer);
          throw err;
        }
        if (s.closed) this.give(buffer);
        else this.deliver({ ...m, data }, () => this.give(buffer));
      })
      .catch((err: unknown) => {
        if (!s.closed) this.onFailure(err);
      });
  }

  /** Resolves once every chunk handed over so far is sent or dropped. */
  async settled(): Promise<void> {
    await Promise.all([...this.streams.values()].map((s) => s.queue));
  }

  /** Followers with a transfer under way (an open reader). */
  following(): NodeId[] {
    return [...this.streams.keys()];
  }

  /** Ends the transfer to `to`: chunks not yet read are dropped, the file is closed. */
  close(to: NodeId): void {
    const s = this.streams.get(to);
    if (s === undefined) return;
    this.streams.delete(to);
    s.closed = true;
    s.queue = s.queue
      .then(() => s.reader)
      .then((reader) => reader?.close())
      .catch(() => undefined);
  }

  /** Ends every transfer; resolves once every file is closed. */
  async closeAll(): Promise<void> {
    const streams = [...this.streams.values()];
    for (const to of [...this.streams.keys()]) this.close(to);
    await Promise.all(streams.map((s) => s.queue));
  }

  private take(length: number): Uint8Array {
    for (;;) {
      const buffer = this.spare.pop();
      if (buffer === undefined) return Buffer.allocUnsafeSlow(length);
      // Kept only as long as chunks are no longer than it (the last one of a snapshot is shorter).
      if (buffer.byteLength >= length) return buffer;
    }
  }

  private give(buffer: Uint8Array): void {
    if (this.spare.length < MAX_SPARE_BUFFERS) this.spare.push(buffer);
  }

  private async openReader(meta: SnapshotMeta): Promise<SnapshotChunkReader | null> {
    const current = this.store.currentSnapshot();
    if (current === null || current.meta.index !== meta.index || current.meta.term !== meta.term) return null;
    try {
      return await this.store.snapshotFiles.openReader(current);
    } catch (err) {
      // Superseded and deleted before it could be opened: as if it had been replaced already.
      if (this.store.currentSnapshot()?.file !== current.file) return null;
      throw err;
    }
  }
}
