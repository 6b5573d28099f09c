import { RaftInvariantError } from "./errors.js";
import type { RaftNode } from "./raft-node.js";
import type { Message, Snapshot, SnapshotChunkMessage } from "./types.js";

/**
 * Where a receiving driver puts a snapshot's bytes as they arrive: a temporary file in a voter
 * (SnapshotReceiver), memory in the simulator and the core's tests.
 */
export interface SnapshotChunkSink {
  /** Bytes written so far, in order: the offset the next chunk must start at. */
  readonly receivedBytes: number;
  /** CRC-32C of those bytes. */
  readonly checksum: number;
  /** Appends a chunk at `offset`; the counts move at once, the I/O may complete later. */
  write(offset: number, data: Uint8Array): void;
  /** Drops what was written. */
  abort(): void;
}

interface Receipt<S> {
  readonly snapshot: Snapshot;
  readonly sink: S;
}

/**
 * The receiving side of a streamed snapshot, between the transport and the core. The core counts
 * offsets only; the bytes of each chunk the core is about to count go to a sink first, so the two
 * always agree on what was received. Once the last byte is in, the sink's checksum is compared with
 * the one the sender announced before the core hears of the chunk: a snapshot that does not match is
 * refused (the sender starts over) and never reaches a Ready. The sink of a complete snapshot waits
 * here until the Ready carrying that snapshot asks for it (`take`), to be sealed and persisted.
 */
export class SnapshotInbox<S extends SnapshotChunkSink> {
  private receiving: Receipt<S> | null = null;
  private complete: Receipt<S> | null = null;
  /** Snapshots refused because their bytes did not match the announced checksum. */
  refusedSnapshots = 0;

  /** `open` starts a sink for a snapshot whose first chunk arrived. */
  constructor(private readonly open: (snapshot: Snapshot) => S) {}

  /** Steps `m` into `node`, a snapshot chunk's bytes first written to a sink. */
  step(node: RaftNode, m: Message): void {
    try {
      if (m.type === "snapshot-chunk") this.stepChunk(node, m);
      else node.step(m);
    } finally {
      // Any message may make the core drop what is being received (the log caught up past it).
      this.reconcile(node);
    }
  }

  /** The sink holding the snapshot a Ready carries, for the driver to seal and persist. */
  take(snapshot: Snapshot): S {
    const c = this.complete;
    if (c === null || !sameSnapshot(c.snapshot, snapshot)) {
      throw new RaftInvariantError(
        `the core handed out snapshot ${snapshot.meta.index}/${snapshot.meta.term}, whose bytes were not received`,
      );
    }
    this.complete = null;
    return c.sink;
  }

  /** The sink of the snapshot being received, or received whole and not yet taken; null when none. */
  sinkInUse(): S | null {
    return (this.receiving ?? this.complete)?.sink ?? null;
  }

  /** Drops whatever is being received or waits to be taken (the driver stops). */
  clear(): void {
    this.receiving?.sink.abort();
    this.complete?.sink.abort();
    this.receiving = null;
    this.complete = null;
  }

  private stepChunk(node: RaftNode, m: SnapshotChunkMessage): void {
    const bare: SnapshotChunkMessage = m.data === null ? m : { ...m, data: null };
    if (!node.takesSnapshotChunk(m)) {
      node.step(bare);
      return;
    }
    const data = m.data;
    if (data === null || data.byteLength !== m.length) {
      throw new RaftInvariantError(
        `snapshot chunk at ${m.offset} carries ${data?.byteLength ?? "no"} bytes, ${m.length} announced`,
      );
    }
    const snapshot: Snapshot = { meta: m.meta, size: m.totalBytes, checksum: m.checksum };
    if (m.offset === 0) {
      this.receiving?.sink.abort();
      this.receiving = { snapshot, sink: this.open(snapshot) };
    }
    const r = this.receiving;
    if (r === null || !sameSnapshot(r.snapshot, snapshot) || r.sink.receivedBytes !== m.offset) {
      // The core expects this chunk, but the bytes received before it are gone here.
      node.refuseSnapshotChunk(m);
      return;
    }
    if (data.byteLength > 0) r.sink.write(m.offset, data);
    if (r.sink.receivedBytes === m.totalBytes) {
      this.receiving = null;
      if (r.sink.checksum !== m.checksum) {
        r.sink.abort();
        this.refusedSnapshots++;
        node.refuseSnapshotChunk(m);
        return;
      }
      this.complete?.sink.abort();
      this.complete = r;
    }
    node.step(bare);
  }

  /** Drops sinks the core no longer counts on (it took a newer snapshot, or it needed none). */
  private reconcile(node: RaftNode): void {
    const r = this.receiving;
    if (r !== null) {
      const inc = node.incomingSnapshot();
      const same =
        inc !== null &&
        sameSnapshot(r.snapshot, { meta: inc.meta, size: inc.totalBytes, checksum: inc.checksum }) &&
        inc.received === r.sink.receivedBytes;
      if (!same) {
        r.sink.abort();
        this.receiving = null;
      }
    }
    const c = this.complete;
    if (c !== null) {
      const pending = node.receivedSnapshot();
      if (pending === null || !sameSnapshot(pending, c.snapshot)) {
        c.sink.abort();
        this.complete = null;
      }
    }
  }
}

function sameSnapshot(a: Snapshot, b: Snapshot): boolean {
  return (
    a.meta.index === b.meta.index &&
    a.meta.term === b.meta.term &&
    a.size === b.size &&
    a.checksum === b.checksum
  );
}
