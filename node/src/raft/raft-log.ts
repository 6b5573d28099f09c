import { LogCompactedError, LogUnavailableError, RaftInvariantError } from "./errors.js";
import { type LogStorage, limitSize } from "./log-storage.js";
import type { Entry, Snapshot } from "./types.js";
import { UnstableLog } from "./unstable-log.js";

/**
 * The log as the core sees it: stable storage followed by the unstable tail, with the commit and
 * apply positions. `applying` is the last index handed out in a Ready, `applied` the last one the
 * driver confirmed through `advance()`.
 */
export class RaftLog {
  readonly storage: LogStorage;
  readonly unstable: UnstableLog;
  committed: number;
  applying: number;
  applied: number;

  constructor(storage: LogStorage, applied: number) {
    this.storage = storage;
    this.unstable = new UnstableLog(storage.lastIndex() + 1);
    const firstIndex = storage.firstIndex();
    this.committed = firstIndex - 1;
    const base = Math.max(applied, firstIndex - 1);
    this.applying = base;
    this.applied = base;
  }

  firstIndex(): number {
    const snap = this.unstable.snapshot;
    return snap ? snap.meta.index + 1 : this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.lastIndex() ?? this.storage.lastIndex();
  }

  lastTerm(): number {
    const term = this.term(this.lastIndex());
    if (term === null) throw new RaftInvariantError(`no term for the last index ${this.lastIndex()}`);
    return term;
  }

  /** The term of the entry at `index`, or null when it is compacted away or beyond the log. */
  term(index: number): number | null {
    const fromUnstable = this.unstable.term(index);
    if (fromUnstable !== null) return fromUnstable;
    if (index >= this.unstable.offset) return null;
    const dummy = this.firstIndex() - 1;
    if (index < dummy || index > this.storage.lastIndex()) return null;
    try {
      return this.storage.term(index);
    } catch (err) {
      if (err instanceof LogCompactedError || err instanceof LogUnavailableError) return null;
      throw err;
    }
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Figure 2's "at least as up-to-date": a later last term, or the same term and no shorter log. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Appends leader entries following (index, logTerm) if our log matches there; returns the index of
   * the last new entry, or null on a mismatch.
   */
  maybeAppend(index: number, logTerm: number, committed: number, entries: readonly Entry[]): number | null {
    if (!this.matchTerm(index, logTerm)) return null;
    const lastNew = index + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      if (conflict <= this.committed) {
        throw new RaftInvariantError(
          `entry ${conflict} conflicts with the committed prefix (committed ${this.committed})`,
        );
      }
      const first = entries[0]!.index;
      this.append(conflict === first ? entries : entries.slice(conflict - first));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** The index of the first entry whose term differs from ours (or that we lack), else 0. */
  findConflict(entries: readonly Entry[]): number {
    for (const entry of entries) {
      if (!this.matchTerm(entry.index, entry.term)) return entry.index;
    }
    return 0;
  }

  /**
   * The largest index at or below `index` whose term is at most `term`: where a follower and a
   * leader whose entry at `index` has `term` can next agree. Used for fast backtracking.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = Math.min(index, this.lastIndex());
    for (;;) {
      const t = this.term(i);
      if (t === null) return { index: i, term: 0 };
      if (t <= term) return { index: i, term: t };
      i--;
    }
  }

  append(entries: readonly Entry[]): number {
    const first = entries[0];
    if (!first) return this.lastIndex();
    if (first.index - 1 < this.committed) {
      throw new RaftInvariantError(
        `append at ${first.index} would overwrite committed index ${this.committed}`,
      );
    }
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  commitTo(index: number): boolean {
    if (index <= this.committed) return false;
    if (index > this.lastIndex()) {
      throw new RaftInvariantError(`commit ${index} is beyond the last index ${this.lastIndex()}`);
    }
    this.committed = index;
    return true;
  }

  hasNextCommittedEntries(): boolean {
    return this.committed > this.applying && this.unstable.snapshot === null;
  }

  /** Committed entries not yet handed out, at most `maxBytes` of them (at least one). */
  nextCommittedEntries(maxBytes: number): readonly Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    return this.slice(this.applying + 1, this.committed + 1, maxBytes);
  }

  /** Entries [lo, hi) from storage and the unstable tail; throws LogCompactedError below the snapshot. */
  slice(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    if (lo >= hi) return [];
    const first = this.firstIndex();
    if (lo < first) throw new LogCompactedError(lo, first);
    if (hi > this.lastIndex() + 1) throw new LogUnavailableError(hi - 1, this.lastIndex());
    const offset = this.unstable.offset;
    if (hi <= offset) return this.storage.entries(lo, hi, maxBytes);
    if (lo >= offset) return limitSize(this.unstable.slice(lo, hi), maxBytes);
    const stored = this.storage.entries(lo, offset, maxBytes);
    // Storage cut the batch short for size: the unstable part cannot follow it.
    if (stored.length < offset - lo) return stored;
    return limitSize([...stored, ...this.unstable.slice(offset, hi)], maxBytes);
  }

  restore(snapshot: Snapshot): void {
    this.committed = snapshot.meta.index;
    this.applying = snapshot.meta.index;
    this.unstable.restore(snapshot);
  }

  /** The snapshot received and not yet persisted, else storage's latest (null while it prepares one). */
  snapshot(): Snapshot | null {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }
}
