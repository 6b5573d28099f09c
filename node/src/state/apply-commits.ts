import { InternalError } from "@keyload/contract";
import type Database from "better-sqlite3";

/**
 * How long applied batches wait in the open transaction before the next batch commits it. 30 ms
 * rather than 10: fewer bytes to the disk per write at one writer, no loss at 256 writers; longer
 * gained nothing (docs/decisions/0007-grouped-apply-commits.md).
 */
export const COMMIT_INTERVAL_MS = 30;
/** Entries after which the open transaction commits even sooner, bounding the pages it holds. */
const COMMIT_ENTRIES = 4096;

/**
 * Groups consecutive apply batches into one SQLite transaction, committed by the first batch that
 * finds it COMMIT_INTERVAL_MS old (as etcd commits its backend every 100 ms rather than per apply).
 * Each batch runs in a savepoint inside it, so a failed batch still rolls back alone. A commit writes
 * every page the batches dirtied to the WAL, and under load the same document, outcome and feed pages
 * are dirtied again and again: one commit for many batches writes each once, and an apply of one entry
 * costs about half the CPU.
 *
 * What waits uncommitted is lost by a crash of this process, which loses nothing: the database still
 * holds a prefix of the log (each batch records its applied index), the Raft log keeps every committed
 * entry durably and is compacted only behind a snapshot, which `flush`es first, and answers given from
 * applied but uncommitted state are of entries the log holds, which a restart re-applies to the same
 * outcomes. Nothing else reads the file meanwhile, so an idle voter may leave its last batches open
 * until its next apply, snapshot or close: no timer, so a failing commit always surfaces to the caller
 * of an apply, which stops the voter.
 */
export class ApplyCommits {
  private openedAt = 0;
  private entries = 0;
  private pendingThrough: number;
  private savedThrough: number;
  private failure: InternalError | null = null;

  constructor(
    private readonly db: Database.Database,
    appliedIndex: number,
    /** Told after every commit, with no transaction open: the WAL checkpoints hang on it. */
    private readonly afterCommit: (db: Database.Database) => void,
    /**
     * Told once, when applied entries are lost from the file while answers were given from them: the
     * voter must stop at once, whoever met the failure (a read's flush meets it with no apply to fail).
     */
    private readonly onFailure: (err: InternalError) => void,
  ) {
    this.pendingThrough = appliedIndex;
    this.savedThrough = appliedIndex;
  }

  /** Before a batch: opens the transaction the batch's savepoint runs in, unless one is open. */
  begin(): void {
    // Nothing may apply on top of lost entries.
    if (this.failure !== null) throw this.failure;
    if (this.db.inTransaction) return;
    this.db.exec("BEGIN");
    this.openedAt = performance.now();
    this.entries = 0;
  }

  /** After a batch that applied `entries` through `index`: commits when the transaction is due. */
  applied(index: number, entries: number): void {
    this.pendingThrough = index;
    this.entries += entries;
    if (this.entries >= COMMIT_ENTRIES || performance.now() - this.openedAt >= COMMIT_INTERVAL_MS) {
      this.flush();
    }
  }

  /**
   * After a batch failed and its savepoint rolled back. Some SQLite errors roll back the whole
   * transaction instead, losing the group's earlier batches from the file while their effects were
   * answered: nothing may then apply on top of that gap.
   */
  batchFailed(): void {
    if (!this.db.inTransaction && this.pendingThrough > this.savedThrough) {
      // Met on the apply path: the batch's own error, which its caller gets, stops the voter.
      this.failure ??= commitFailed(
        new Error(`entries ${this.savedThrough + 1}-${this.pendingThrough} were rolled back`),
      );
    }
  }

  /** Commits what is open now (before a snapshot copy reads the file, and at close). */
  flush(): void {
    if (!this.db.open || !this.db.inTransaction) return;
    try {
      this.db.exec("COMMIT");
    } catch (error) {
      if (this.db.inTransaction) this.db.exec("ROLLBACK");
      throw this.failed(error);
    }
    this.savedThrough = this.pendingThrough;
    this.afterCommit(this.db);
  }

  private failed(cause: unknown): InternalError {
    if (this.failure === null) {
      this.failure = commitFailed(cause);
      this.onFailure(this.failure);
    }
    return this.failure;
  }

  /** The applied index the database file holds: what a crash of this process would keep. */
  saved(): number {
    return this.savedThrough;
  }
}

function commitFailed(cause: unknown): InternalError {
  return new InternalError("committing applied entries failed; the voter must restart", {
    reason: "StateCommitFailed",
    cause,
  });
}
