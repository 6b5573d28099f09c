import { RaftInvariantError } from "./errors.js";
import type { Entry, Snapshot } from "./types.js";

/**
 * The tail of the log not yet persisted: entries from `offset` on, and perhaps a snapshot received
 * from the leader. The driver persists them from a Ready; `stableTo` then drops what it confirmed.
 */
export class UnstableLog {
  snapshot: Snapshot | null = null;
  entries: Entry[] = [];
  offset: number;

  constructor(offset: number) {
    this.offset = offset;
  }

  lastIndex(): number | null {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot ? this.snapshot.meta.index : null;
  }

  /** The term at `index` when the unstable part knows it, else null. */
  term(index: number): number | null {
    if (index < this.offset) {
      const snap = this.snapshot;
      return snap && snap.meta.index === index ? snap.meta.term : null;
    }
    const entry = this.entries[index - this.offset];
    return entry ? entry.term : null;
  }

  /** Entries up to `index` (with `term`) are durable: drop them unless they were replaced meanwhile. */
  stableTo(index: number, term: number): void {
    if (index < this.offset || this.term(index) !== term) return;
    this.entries = this.entries.slice(index + 1 - this.offset);
    this.offset = index + 1;
  }

  stableSnapTo(index: number): void {
    if (this.snapshot && this.snapshot.meta.index === index) this.snapshot = null;
  }

  restore(snapshot: Snapshot): void {
    this.offset = snapshot.meta.index + 1;
    this.entries = [];
    this.snapshot = snapshot;
  }

  truncateAndAppend(entries: readonly Entry[]): void {
    const first = entries[0];
    if (!first) return;
    const after = first.index;
    if (after === this.offset + this.entries.length) {
      for (const e of entries) this.entries.push(e);
    } else if (after <= this.offset) {
      // Replaces everything unstable and, once persisted, the stored suffix from `after` on.
      this.offset = after;
      this.entries = entries.slice();
    } else {
      this.entries = this.entries.slice(0, after - this.offset);
      for (const e of entries) this.entries.push(e);
    }
  }

  slice(lo: number, hi: number): Entry[] {
    if (lo < this.offset || hi > this.offset + this.entries.length) {
      throw new RaftInvariantError(
        `unstable slice [${lo}, ${hi}) outside [${this.offset}, ${this.offset + this.entries.length})`,
      );
    }
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
