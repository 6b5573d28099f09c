import type { Entry, HardState } from "../raft/types.js";
import type { BatchState, LogDatabase, LogState } from "./log-database.js";
import type { JournalBatch, JournalOp } from "./log-journal.js";

/** Journaled bytes past which the database takes the batches in at once rather than on the timer. */
export const ABSORB_MAX_BYTES = 8 * 1024 * 1024;
/**
 * Entries the timer's absorb takes in one transaction before yielding to the event loop, which a few
 * thousand at once held for many milliseconds; the rest follows in the next turns
 * (docs/decisions/0017-log-database-background-work.md).
 */
export const ABSORB_STEP_ENTRIES = 512;

/** An op as the database takes it in: whether its entries replace some from their first index on. */
export interface AbsorbOp extends JournalOp {
  readonly truncates: boolean;
}

/** A journaled batch the database has not taken in yet, with the hard state it leaves and its journal bytes. */
export interface PendingBatch extends JournalBatch {
  readonly ops: readonly AbsorbOp[];
  readonly hardState: HardState;
  readonly bytes: number;
}

/** What the absorber needs of the store it works for. */
export interface AbsorberHost {
  /** The store's state now: an absorb that inserts no entry writes it with the batch state. */
  state(): LogState;
  /** Called after each absorb's transaction, with the batches it took in (WAL accounting, its fsync). */
  absorbed(batches: readonly PendingBatch[]): void;
  /** Stops the store for good after a failed absorb; returns the error to throw. */
  fail(err: unknown): Error;
  /** The store is stopped: the timer's absorb does nothing. */
  stopped(): boolean;
  /** A checkpoint's final pass is holding commits back: the timer's absorb tries again later. */
  gated(): boolean;
}

/**
 * The journaled batches the database has not taken in yet, and the timer that takes them in: every
 * `intervalMs` (at most ABSORB_STEP_ENTRIES entries a turn), at once past ABSORB_MAX_BYTES, or when
 * the store asks (`absorb`) because it needs the database to hold everything.
 */
export class JournalAbsorber {
  /** Oldest first, and their journal bytes. */
  private pending: PendingBatch[] = [];
  private pendingBytes = 0;
  /** Cancels the scheduled absorb, if one is. */
  private cancelAbsorb: (() => void) | null = null;

  constructor(
    private readonly db: LogDatabase,
    private readonly intervalMs: number,
    private readonly host: AbsorberHost,
  ) {}

  /** Batches journaled but not taken in yet. */
  get pendingBatches(): number {
    return this.pending.length;
  }

  /** Queues a batch just appended to the journal; `absorbSoon` then decides when it goes in. */
  add(batch: PendingBatch): void {
    this.pending.push(batch);
    this.pendingBytes += batch.bytes;
  }

  /** Takes the batches in at once if they passed ABSORB_MAX_BYTES, else on the timer. */
  absorbSoon(): void {
    if (this.pendingBytes >= ABSORB_MAX_BYTES) this.absorb();
    else this.schedule();
  }

  /**
   * The database takes in the journaled batches, oldest first, in one transaction with no fsync: all
   * of them, or batches up to about `maxEntries` entries (at least one), the rest in the next turns.
   */
  absorb(maxEntries = Number.POSITIVE_INFINITY): void {
    this.cancelAbsorb?.();
    this.cancelAbsorb = null;
    if (this.pending.length === 0) return;
    let taken = 0;
    let entries = 0;
    while (taken < this.pending.length && entries < maxEntries) {
      const b = this.pending[taken++]!;
      for (const op of b.ops) entries += op.entries.length;
      this.pendingBytes -= b.bytes;
    }
    const batches = this.pending.splice(0, taken);
    try {
      absorbInto(this.db, this.host.state(), batches);
    } catch (err) {
      throw this.host.fail(err);
    }
    this.host.absorbed(batches);
    if (this.pending.length > 0) this.schedule(0);
  }

  private schedule(ms = this.intervalMs): void {
    if (this.cancelAbsorb !== null) return;
    const run = (): void => {
      this.cancelAbsorb = null;
      if (this.host.stopped()) return;
      // A checkpoint's final pass wants no new frames; it reschedules nothing, so try again shortly.
      if (this.host.gated()) {
        this.schedule();
        return;
      }
      try {
        this.absorb(ABSORB_STEP_ENTRIES);
      } catch {
        // The store is stopped now; its next call reports why.
      }
    };
    if (ms === 0) {
      const immediate = setImmediate(run);
      this.cancelAbsorb = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(run, ms).unref();
      this.cancelAbsorb = () => clearTimeout(timer);
    }
  }
}

/**
 * Writes journaled batches into the database in one transaction (no fsync), with the batch state of
 * the last one; `current` gives the state row's other fields.
 */
export function absorbInto(db: LogDatabase, current: LogState, batches: readonly PendingBatch[]): void {
  const last = batches[batches.length - 1]!;
  const batch: BatchState = { seq: last.seq, hardState: last.hardState };
  db.transaction(() => {
    let newest: Entry | null = null;
    for (const b of batches) {
      for (const op of b.ops) {
        const first = op.entries[0];
        if (first === undefined) continue;
        if (op.truncates) db.deleteFrom(first.index);
        for (const e of op.entries) db.insert(e);
        newest = op.entries[op.entries.length - 1]!;
      }
    }
    // The newest row: the batch state rides on the page being written anyway.
    if (newest !== null) db.recordBatchState(newest, batch);
    else db.writeState({ ...current, ...batch });
  });
}
