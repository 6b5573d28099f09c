import { crc32c } from "../checksum/crc32c.js";
import { LogUnavailableError, RaftInvariantError, SnapshotOutOfDateError } from "../raft/errors.js";
import type { LogStorage } from "../raft/log-storage.js";
import { MemoryStorage } from "../raft/memory-storage.js";
import type {
  ConfState,
  Entry,
  HardState,
  Snapshot,
  SnapshotChunkMessage,
  SnapshotMeta,
} from "../raft/types.js";

const EMPTY = new Uint8Array(0);

/** A snapshot with a file: what a leader can stream. */
interface SnapshotFile {
  readonly snapshot: Snapshot;
  readonly data: Uint8Array;
}

/**
 * A simulated node's durable log, over a MemoryStorage, in one of two modes. Eager, it is the
 * MemoryStorage: every local snapshot is made with its file. Lazy, as the durable store keeps it
 * (docs/decisions/0021-lazy-snapshots.md), a local snapshot is only a point: the state machine made
 * durable there and the log compacted behind it, with no file. Asked for a snapshot while on a point,
 * it answers null and marks one wanted; the driver then copies the state machine, at its applied index
 * by then, and records the copy (`materialize`), which `snapshot()` hands out from then on, until a
 * later point supersedes it.
 *
 * The MemoryStorage keeps the log and the hard state; its own snapshot stands for the base the log
 * was compacted behind (a point holds empty bytes there), and the file, when there is one, is kept
 * here. Points and files are durable once made, as the simulator's disks keep snapshots; only the
 * "wanted" mark is volatile, as the store's is.
 */
export class LazySnapshotStorage implements LogStorage {
  private readonly log: MemoryStorage;
  /** The latest snapshot's file; null while the latest is a point. */
  private file: SnapshotFile | null;
  private wanted = false;
  private unavailable = 0;
  /** Files ever recorded (made locally, copied or received), as `fileKey`s. */
  private readonly files = new Set<string>();
  /** Points taken that no copy was made at (a copy beyond a point does not count), as `pointKey`s. */
  private readonly barePoints = new Set<string>();

  constructor(readonly lazy: boolean) {
    this.log = new MemoryStorage({ voters: [] });
    this.file = { snapshot: this.log.snapshot(), data: EMPTY };
  }

  // --- LogStorage: what the core reads ---------------------------------------------------------

  /** The hard state, with the configuration of the latest snapshot (a point's included), as the store gives it. */
  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: this.log.initialState().hardState, conf: this.snapshotMeta().conf };
  }

  entries(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    return this.log.entries(lo, hi, maxBytes);
  }

  term(index: number): number {
    return this.log.term(index);
  }

  firstIndex(): number {
    return this.log.firstIndex();
  }

  lastIndex(): number {
    return this.log.lastIndex();
  }

  /** The latest file; on a point, null, and a copy is wanted. Only the core may ask: asking marks it. */
  snapshot(): Snapshot | null {
    if (this.file !== null) return this.file.snapshot;
    this.wanted = true;
    this.unavailable++;
    return null;
  }

  // --- What the driver reads, without side effects -----------------------------------------------

  /** The latest snapshot's metadata, a point's included: what the log is compacted behind or covers. */
  snapshotMeta(): SnapshotMeta {
    return this.file?.snapshot.meta ?? this.log.snapshot().meta;
  }

  /** Whether the latest snapshot is a point with no file yet. */
  get onPoint(): boolean {
    return this.file === null;
  }

  /** Whether the core asked for a snapshot while on a point: the driver should copy the state machine. */
  snapshotWanted(): boolean {
    return this.wanted && this.file === null;
  }

  /** How often the core was answered null. */
  get unavailableAnswers(): number {
    return this.unavailable;
  }

  /** The latest file's bytes, as the snapshot file holds them. */
  snapshotData(): Uint8Array {
    if (this.file === null)
      throw new RaftInvariantError(`snapshot ${this.snapshotMeta().index} is a point, with no file`);
    return this.file.data;
  }

  /**
   * `m` with its bytes, read from the latest file as a voter reads its snapshot file; null when that is
   * not the chunk's snapshot (a newer file or point superseded it: the message is lost, and the core
   * moves on when it rewinds).
   */
  fillChunk(m: SnapshotChunkMessage): SnapshotChunkMessage | null {
    const file = this.file;
    if (file === null) return null;
    const s = file.snapshot;
    if (s.meta.index !== m.meta.index || s.meta.term !== m.meta.term || s.checksum !== m.checksum)
      return null;
    return { ...m, data: file.data.subarray(m.offset, m.offset + m.length) };
  }

  /** Whether this storage ever recorded a file of this snapshot (made, copied or received). */
  hasFile(meta: SnapshotMeta, checksum: number): boolean {
    return this.files.has(fileKey(meta.index, meta.term, checksum));
  }

  /** Whether (index, term) is a point taken here that never got a file of its own. */
  isBarePoint(index: number, term: number): boolean {
    return this.barePoints.has(pointKey(index, term));
  }

  // --- What the driver writes --------------------------------------------------------------------

  setHardState(hs: HardState): void {
    this.log.setHardState(hs);
  }

  append(entries: readonly Entry[]): void {
    this.log.append(entries);
  }

  /** Replaces the whole log by a snapshot received from the leader, `data` being its file. */
  applySnapshot(snap: Snapshot, data: Uint8Array): void {
    // A copy may stand beyond the base the MemoryStorage checks against.
    const current = this.snapshotMeta().index;
    if (snap.meta.index <= current) throw new SnapshotOutOfDateError(snap.meta.index, current);
    this.log.applySnapshot(snap, data);
    this.record({ snapshot: snap, data });
  }

  /**
   * A local snapshot of the state machine at `index` (applied, and made durable by the caller): with
   * its file (`serialize`) when eager, a point when lazy.
   */
  takeSnapshot(index: number, conf: ConfState, serialize: () => Uint8Array): void {
    const current = this.snapshotMeta().index;
    if (index <= current) throw new SnapshotOutOfDateError(index, current);
    if (!this.lazy) {
      const data = serialize();
      this.record({ snapshot: this.log.createSnapshot(index, conf, data), data });
      return;
    }
    const point = this.log.createSnapshot(index, conf, EMPTY);
    this.file = null;
    this.barePoints.add(pointKey(point.meta.index, point.meta.term));
  }

  /**
   * Records the copy the driver made of the state machine at `index`, at or beyond the point, for the
   * snapshot wanted: the latest snapshot from then on. The log keeps what it held after the point.
   */
  materialize(index: number, conf: ConfState, data: Uint8Array): Snapshot {
    if (this.file !== null) throw new RaftInvariantError("a snapshot copy is recorded while not on a point");
    const point = this.log.snapshot().meta;
    if (index < point.index) throw new SnapshotOutOfDateError(index, point.index);
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    const snapshot: Snapshot = {
      meta: { index, term: this.log.term(index), conf },
      size: data.byteLength,
      checksum: crc32c(data),
    };
    if (index === point.index) this.barePoints.delete(pointKey(point.index, point.term));
    this.record({ snapshot, data });
    return snapshot;
  }

  /** Drops entries up to `index`, which the latest snapshot or point covers. */
  compact(index: number): void {
    this.log.compact(index);
  }

  /** Power loss: the store's "wanted" mark is memory only; points and files are durable. */
  crash(): void {
    this.wanted = false;
  }

  private record(file: SnapshotFile): void {
    this.file = file;
    this.wanted = false;
    const { meta, checksum } = file.snapshot;
    this.files.add(fileKey(meta.index, meta.term, checksum));
  }
}

function fileKey(index: number, term: number, checksum: number): string {
  return `${index}/${term}/${checksum}`;
}

function pointKey(index: number, term: number): string {
  return `${index}/${term}`;
}
