import type { ConfState, Entry, HardState, Snapshot } from "./types.js";

/**
 * What the core reads from stable storage. The driver writes to storage as each `Ready` asks and
 * only then calls `advance()`, so everything readable here is durable. Entry indexes run from
 * `firstIndex()` to `lastIndex()`; the entry just before `firstIndex()` is the snapshot's, whose term
 * `term()` still answers.
 */
export interface LogStorage {
  initialState(): { hardState: HardState; conf: ConfState };
  /** Entries in [lo, hi), at least one when lo < hi, then as many as fit in `maxBytes`. */
  entries(lo: number, hi: number, maxBytes: number): readonly Entry[];
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  /**
   * The latest snapshot, whose bytes the driver streams to a follower; a new log's is the empty one at
   * index 0. Null means the storage has none to send right now and, being asked, is preparing one
   * (it compacted its log past a point it has no snapshot file for, as etcd-raft's
   * ErrSnapshotTemporarilyUnavailable): the leader sends nothing and asks again later.
   */
  snapshot(): Snapshot | null;
}

/** Bytes an entry counts for flow control and size limits. */
export function entrySize(entry: Entry): number {
  return payloadEntrySize(entry.data);
}

/**
 * What an entry holding `data` will count once appended: the proposal bound is checked before the
 * entry exists and must charge exactly what is released when it commits. The fixed part stands for
 * the entry's index, term and type, so that empty entries are not free.
 */
export function payloadEntrySize(data: Uint8Array): number {
  return data.byteLength + 24;
}

/** The longest prefix of `entries` within `maxBytes`, but never empty when `entries` is not. */
export function limitSize(entries: readonly Entry[], maxBytes: number): readonly Entry[] {
  if (entries.length === 0) return entries;
  let size = entrySize(entries[0]!);
  let n = 1;
  for (; n < entries.length; n++) {
    size += entrySize(entries[n]!);
    if (size > maxBytes) break;
  }
  return n === entries.length ? entries : entries.slice(0, n);
}
