import type { LogDatabase } from "./log-database.js";
import type { LogIndex } from "./log-index.js";

/** What the background deletion needs of the store it works for. */
export interface CompactionHost {
  /** The store is stopped, or a checkpoint's final pass holds commits back: no deletion now. */
  held(): boolean;
  /** Called after each step's transaction (WAL accounting). */
  deleted(): void;
  /** Stops the store for good after a failed step. */
  fail(err: unknown): void;
}

/**
 * Deletes the rows a compaction left below the compaction point, in steps of `stepEntries` rows every
 * `stepIntervalMs`: the compaction itself writes only the compaction point, and paced steps let the
 * deletions' WAL frames reach the disk a few at a time with the appends' fsyncs
 * (docs/decisions/0017-log-database-background-work.md).
 */
export class LogCompaction {
  /** The lowest row index that may still be stored below the compaction point, or null when none is. */
  private next: number | null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: LogDatabase,
    private readonly index: LogIndex,
    private readonly stepEntries: number,
    private readonly stepIntervalMs: number,
    next: number | null,
    private readonly host: CompactionHost,
  ) {
    this.next = next;
  }

  /** Rows from `index` on may now lie below the compaction point (unless lower ones already wait). */
  markFrom(index: number): void {
    this.next ??= index;
  }

  /** Schedules the next step, unless one is scheduled, nothing waits, or the host holds deletions. */
  schedule(): void {
    // While commits are held for a checkpoint, deletions wait too; the checkpoint reschedules them.
    if (this.timer !== null || this.next === null || this.host.held()) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.step();
    }, this.stepIntervalMs);
    this.timer.unref();
  }

  /** Cancels the scheduled step (at close). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private step(): void {
    const from = this.next;
    if (from === null || this.host.held()) return;
    const to = Math.min(from + this.stepEntries, this.index.startIndex + 1);
    try {
      this.db.transaction(() => this.db.deleteRange(from, to));
    } catch (err) {
      this.host.fail(err);
      return;
    }
    this.host.deleted();
    this.next = to > this.index.startIndex ? null : to;
    this.schedule();
  }
}
