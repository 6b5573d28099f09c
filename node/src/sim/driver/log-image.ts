import { entrySize } from "../../raft/log-storage.js";
import type { ConfState, Entry, HardState } from "../../raft/types.js";
import type { StoreOp } from "../../storage/durable-log-store.js";
import type { SnapshotRecord } from "../../storage/log-database.js";

/**
 * A Raft log as the durable store keeps it (its state row and its retained entries), with no checks:
 * the simulated store checks what it commits, and its disk replays the same accepted ops onto the
 * durable image, so both must move by the same code.
 */
export class LogImage {
  /** Bumped by every commit that accepted an op, as the store's write-batch sequence number. */
  seq = 0;
  hardState: HardState = { term: 0, vote: null, commit: 0 };
  /** The compaction point: entries after it are retained, its own term is still answered. */
  startIndex = 0;
  startTerm = 0;
  snapshot: SnapshotRecord;
  /** entries[i] is the entry at startIndex + 1 + i. */
  private ents: Entry[] = [];
  /** totals[i] is the byte total of every entry up to entries[i], from `base` on (running sums). */
  private totals: number[] = [];
  /** The running byte total up to and including the compaction point. */
  private base = 0;

  constructor(conf: ConfState) {
    this.snapshot = { meta: { index: 0, term: 0, conf }, file: null, size: 0, checksum: 0 };
  }

  clone(): LogImage {
    const c = new LogImage(this.snapshot.meta.conf);
    c.seq = this.seq;
    c.hardState = this.hardState;
    c.startIndex = this.startIndex;
    c.startTerm = this.startTerm;
    c.snapshot = this.snapshot;
    c.ents = this.ents.slice();
    c.totals = this.totals.slice();
    c.base = this.base;
    return c;
  }

  get lastIndex(): number {
    return this.startIndex + this.ents.length;
  }

  /** The term at `index`, which the caller has checked lies in [startIndex, lastIndex]. */
  term(index: number): number {
    return index === this.startIndex ? this.startTerm : this.ents[index - this.startIndex - 1]!.term;
  }

  /** The entries in [lo, hi), which the caller has checked lie within the retained log. */
  slice(lo: number, hi: number): Entry[] {
    return this.ents.slice(lo - this.startIndex - 1, hi - this.startIndex - 1);
  }

  /** Bytes (as `entrySize` counts them) of the entries in [lo, hi), both within the retained log. */
  bytes(lo: number, hi: number): number {
    if (hi <= lo) return 0;
    return this.runningTotal(hi - 1) - this.runningTotal(lo - 1);
  }

  /** Applies one op the store accepted, as DurableLogStore's `apply` does. */
  apply(op: StoreOp): void {
    if (op.kind === "record-snapshot") {
      this.snapshot = op.snapshot;
      return;
    }
    const snap = op.snapshot;
    if (snap !== null) {
      // A received snapshot replaces the whole log, even entries after it that agree with it.
      this.snapshot = snap;
      this.startIndex = snap.meta.index;
      this.startTerm = snap.meta.term;
      this.ents = [];
      this.totals = [];
      this.base = 0;
    }
    this.append(op.entries);
    if (op.hardState !== null) this.hardState = op.hardState;
  }

  /** Drops the entries up to and including `index`, checked to lie in (startIndex, snapshot index]. */
  compact(index: number): void {
    const drop = index - this.startIndex;
    this.startTerm = this.term(index);
    this.base = this.runningTotal(index);
    this.ents.splice(0, drop);
    this.totals.splice(0, drop);
    this.startIndex = index;
  }

  /** Appends entries, replacing those from the first one's index on; those at or below the compaction point are skipped. */
  private append(entries: readonly Entry[]): void {
    const skip = Math.max(0, this.startIndex + 1 - (entries[0]?.index ?? 0));
    if (skip >= entries.length) return;
    const keep = entries[skip]!.index - this.startIndex - 1;
    this.ents.length = keep;
    this.totals.length = keep;
    for (let i = skip; i < entries.length; i++) {
      const e = entries[i]!;
      this.totals.push(this.runningTotal(e.index - 1) + entrySize(e));
      this.ents.push(e);
    }
  }

  private runningTotal(index: number): number {
    return index === this.startIndex ? this.base : this.totals[index - this.startIndex - 1]!;
  }
}
