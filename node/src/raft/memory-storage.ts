import { crc32c } from "../checksum/crc32c.js";
import {
  LogCompactedError,
  LogUnavailableError,
  RaftInvariantError,
  SnapshotOutOfDateError,
} from "./errors.js";
import { type LogStorage, limitSize } from "./log-storage.js";
import type { ConfState, Entry, HardState, Snapshot } from "./types.js";

const EMPTY = new Uint8Array(0);

/**
 * A complete `LogStorage` held in memory: the simulator's disk image and the reference the durable
 * store is tested against. `entries[0]` is a sentinel standing for the snapshot (its index and term).
 */
export class MemoryStorage implements LogStorage {
  private hardState: HardState = { term: 0, vote: null, commit: 0 };
  private snap: Snapshot;
  /** The snapshot's bytes: what the snapshot file holds in the durable store. */
  private snapData: Uint8Array = EMPTY;
  private ents: Entry[];

  constructor(conf: ConfState) {
    this.snap = { meta: { index: 0, term: 0, conf }, size: 0, checksum: 0 };
    this.ents = [{ index: 0, term: 0, type: "noop", data: EMPTY }];
  }

  initialState(): { hardState: HardState; conf: ConfState } {
    return { hardState: this.hardState, conf: this.snap.meta.conf };
  }

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  entries(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    const offset = this.ents[0]!.index;
    if (lo <= offset) throw new LogCompactedError(lo, offset + 1);
    if (hi > this.lastIndex() + 1) throw new LogUnavailableError(hi - 1, this.lastIndex());
    return limitSize(this.ents.slice(lo - offset, hi - offset), maxBytes);
  }

  term(index: number): number {
    const offset = this.ents[0]!.index;
    if (index < offset) throw new LogCompactedError(index, offset + 1);
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    return this.ents[index - offset]!.term;
  }

  firstIndex(): number {
    return this.ents[0]!.index + 1;
  }

  lastIndex(): number {
    return this.ents[0]!.index + this.ents.length - 1;
  }

  /** Never null: every compaction here is covered by a snapshot already made (see `compact`). */
  snapshot(): Snapshot {
    return this.snap;
  }

  /** The current snapshot's bytes, as a snapshot file holds them. */
  snapshotData(): Uint8Array {
    return this.snapData;
  }

  /** Replaces the whole log by a snapshot received from the leader, `data` being its bytes. */
  applySnapshot(snap: Snapshot, data: Uint8Array): void {
    if (snap.meta.index <= this.snap.meta.index)
      throw new SnapshotOutOfDateError(snap.meta.index, this.snap.meta.index);
    if (data.byteLength !== snap.size || crc32c(data) !== snap.checksum) {
      throw new RaftInvariantError(
        `the bytes of snapshot ${snap.meta.index} do not match its size and checksum`,
      );
    }
    this.snap = snap;
    this.snapData = data;
    this.ents = [{ index: snap.meta.index, term: snap.meta.term, type: "noop", data: EMPTY }];
  }

  /** Records a snapshot of the local state machine taken at `index` (which must be applied). */
  createSnapshot(index: number, conf: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.snap.meta.index) throw new SnapshotOutOfDateError(index, this.snap.meta.index);
    if (index > this.lastIndex()) throw new LogUnavailableError(index, this.lastIndex());
    this.snap = {
      meta: { index, term: this.term(index), conf },
      size: data.byteLength,
      checksum: crc32c(data),
    };
    this.snapData = data;
    return this.snap;
  }

  /** Drops entries up to and including `index` (covered by the snapshot), keeping its term as the sentinel. */
  compact(index: number): void {
    const offset = this.ents[0]!.index;
    if (index <= offset) return;
    if (index > this.snap.meta.index) {
      throw new RaftInvariantError(`compaction to ${index} passes the snapshot at ${this.snap.meta.index}`);
    }
    const sentinel = this.ents[index - offset]!;
    this.ents = [
      { index: sentinel.index, term: sentinel.term, type: "noop", data: EMPTY },
      ...this.ents.slice(index - offset + 1),
    ];
  }

  /** Appends entries, replacing any stored suffix they conflict with. */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const offset = this.ents[0]!.index;
    const first = entries[0]!.index;
    if (first > this.lastIndex() + 1) {
      throw new RaftInvariantError(`append at ${first} leaves a gap after last index ${this.lastIndex()}`);
    }
    // Entries already covered by the snapshot are committed and identical; skip them.
    const skip = Math.max(0, offset + 1 - first);
    if (skip >= entries.length) return;
    const start = first + skip;
    this.ents.length = start - offset;
    for (let i = skip; i < entries.length; i++) this.ents.push(entries[i]!);
  }
}
