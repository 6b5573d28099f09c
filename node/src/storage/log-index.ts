import { entrySize } from "../raft/log-storage.js";
import type { Entry } from "../raft/types.js";

/**
 * The shape of the retained log held in memory: its bounds, the term of every position and the byte
 * size of every range, so `term()`, `firstIndex()`, `lastIndex()` and the snapshot policy never touch
 * SQLite. Terms are kept as runs (one per term change), sizes as running totals: 8 bytes per retained
 * entry, which compaction behind snapshots bounds.
 */
export class LogIndex {
  /** The position before the first retained entry (the compaction point) and its term. */
  private start = 0;
  private startTerm = 0;
  private last = 0;
  /** Run k covers positions runStarts[k] .. runStarts[k+1]-1, all of term runTerms[k]. */
  private runStarts: number[] = [];
  private runTerms: number[] = [];
  /** totals[head + (i - start)] is the byte total of all entries up to position i; totals[head] is for `start`. */
  private totals = new Float64Array(1024);
  private head = 0;

  constructor(start: number, startTerm: number) {
    this.reset(start, startTerm);
  }

  get firstIndex(): number {
    return this.start + 1;
  }

  get startIndex(): number {
    return this.start;
  }

  get lastIndex(): number {
    return this.last;
  }

  /** The term at `index`, which the caller has checked lies in [startIndex, lastIndex]. */
  term(index: number): number {
    if (index === this.start) return this.startTerm;
    const starts = this.runStarts;
    let k = starts.length - 1;
    // The tail is what the hot path asks for; search only when it is not there.
    if (starts[k]! > index) {
      let lo = 0;
      let hi = k;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (starts[mid]! <= index) lo = mid;
        else hi = mid - 1;
      }
      k = lo;
    }
    return this.runTerms[k]!;
  }

  /** Bytes (as `entrySize` counts them) of the entries in [lo, hi), both within the retained log. */
  bytes(lo: number, hi: number): number {
    if (hi <= lo) return 0;
    return this.totals[this.head + (hi - 1 - this.start)]! - this.totals[this.head + (lo - 1 - this.start)]!;
  }

  /** Appends the entry at lastIndex + 1. */
  append(entry: Entry): void {
    const n = this.runTerms.length;
    if (n === 0 || this.runTerms[n - 1] !== entry.term) {
      this.runStarts.push(entry.index);
      this.runTerms.push(entry.term);
    }
    let at = this.head + (entry.index - this.start);
    if (at >= this.totals.length) {
      this.grow();
      at = entry.index - this.start;
    }
    this.totals[at] = this.totals[at - 1]! + entrySize(entry);
    this.last = entry.index;
  }

  /** Drops the entries from `index` on. */
  truncateFrom(index: number): void {
    while (this.runStarts.length > 0 && this.runStarts[this.runStarts.length - 1]! >= index) {
      this.runStarts.pop();
      this.runTerms.pop();
    }
    this.last = index - 1;
  }

  /** Drops the entries up to and including `index`, which becomes the compaction point. */
  compactTo(index: number): void {
    const term = this.term(index);
    let drop = 0;
    while (drop < this.runStarts.length && (this.runStarts[drop + 1] ?? this.last + 1) <= index + 1) drop++;
    this.runStarts.splice(0, drop);
    this.runTerms.splice(0, drop);
    if (this.runStarts.length > 0) this.runStarts[0] = index + 1;
    this.head += index - this.start;
    this.start = index;
    this.startTerm = term;
    // Reclaims the dropped prefix once it outweighs what is kept, so compaction stays amortised O(1).
    const used = this.last - this.start + 1;
    if (this.head > used) {
      this.totals.copyWithin(0, this.head, this.head + used);
      this.head = 0;
    }
  }

  /** Forgets the whole log: it now ends at (index, term), as after installing a snapshot. */
  reset(index: number, term: number): void {
    this.start = index;
    this.startTerm = term;
    this.last = index;
    this.runStarts = [];
    this.runTerms = [];
    this.head = 0;
    this.totals[0] = 0;
  }

  private grow(): void {
    const used = this.last - this.start + 1;
    const next = new Float64Array(Math.max(used * 2, 1024));
    next.set(this.totals.subarray(this.head, this.head + used));
    this.totals = next;
    this.head = 0;
  }
}
