import { statSync } from "node:fs";
import { InternalError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { checkpointBytesWithin, WAL_FRAME_BYTES, walFrameBytes } from "../fs/sqlite-limits.js";
import { WalCheckpointer } from "../fs/wal-checkpointer.js";
import { WalGrowth } from "../fs/wal-growth.js";

/**
 * WAL a cycle aims to checkpoint, ~8 MiB (2,000 frames of 4 KiB pages). Applies commit in groups
 * (ApplyCommits), which already writes a page many applies rewrite once per group; a larger WAL (~40
 * MiB was tried, as SQLite's autocheckpoint) made each checkpoint's fsync long enough to show in the
 * p99 under load, with the same throughput (docs/decisions/0016-state-checkpoints-off-the-apply-path.md).
 * In bytes, as the database's pages may be 4 or 16 KiB (STATE_PAGE_BYTES).
 */
const TARGET_BYTES = 2000 * WAL_FRAME_BYTES;
/**
 * Commits before the first cycle at TARGET_BYTES (scaled for another target); later cycles scale it
 * by the WAL the last one found.
 */
const FIRST_CYCLE_COMMITS = 16;
const MAX_CYCLE_COMMITS = 256;
/**
 * The most WAL a worker pass may leave uncopied for the applying thread's last pass (~1 MiB). A reader
 * holds frames back from every checkpoint (a snapshot's copy holds its read transaction for seconds,
 * while the WAL grows by tens of megabytes under load): the applying thread then copied all of them
 * itself, with two fsyncs on a disk busy with the snapshot, and every voter's event loop stopped for up
 * to a second just as its snapshot ended. Beyond this, the next cycle's worker pass copies them instead.
 */
const FINAL_MAX_BACKLOG_BYTES = 256 * WAL_FRAME_BYTES;

/** The WAL a cycle aims at under a WAL limit: TARGET_BYTES, or less to stay within half of it. */
export function targetBytesWithin(walLimitBytes: number): number {
  return checkpointBytesWithin(walLimitBytes, TARGET_BYTES);
}

interface CheckpointRow {
  readonly log: number;
  readonly checkpointed: number;
}

/**
 * Checkpoints the state database's WAL in cycles, the bulk of each on a worker thread. SQLite's own
 * autocheckpoint ran inside a commit on the event loop: copying ~2,000 pages and fsyncing the WAL and
 * the database held the applying thread for milliseconds every few seconds, and every request waited
 * behind it (docs/decisions/0016-state-checkpoints-off-the-apply-path.md).
 *
 * A cycle: after `commitsPerCycle` commits, a worker copies what the WAL holds while applies carry on.
 * Then, right after the next commit, the applying thread copies the few frames committed meanwhile
 * itself, unless the worker could not copy most of them (FINAL_MAX_BACKLOG_BYTES): SQLite restarts
 * the WAL from its beginning only at a write transaction that starts once every frame has been copied,
 * which a checkpoint running beside the commits never achieves. The cycle length adapts so that a cycle
 * finds about TARGET_BYTES of WAL, and a cycle also starts as soon as the WAL file grows past that:
 * commits that grow larger at once (a flood after an idle spell) would otherwise fill the WAL with many
 * times the target, each new frame costing the disk and the page cache fresh space, before the cycle
 * scaled to the small ones came round.
 */
export class StateWalCheckpoints {
  readonly stats = {
    cycles: 0,
    restarts: 0,
    /** Worker passes that left too much for the applying thread: another worker pass followed. */
    deferred: 0,
    /** The most frames a worker pass left uncopied before the applying thread's pass. */
    finalBacklogMax: 0,
  };
  private readonly checkpointer: WalCheckpointer;
  /** Starts a cycle early when the last commit grew the WAL file past the cycle's target. */
  private readonly growth: WalGrowth;
  private commits = 0;
  private commitsPerCycle: number;
  /** A WAL frame of the database's pages (usePageSize). */
  private frameBytes = WAL_FRAME_BYTES;
  private phase: "idle" | "bulk" | "final" = "idle";
  private running: Promise<void> | null = null;
  private failure: Error | null = null;
  private readonly failureListeners: ((err: InternalError) => void)[] = [];
  private closed = false;

  constructor(
    path: string,
    private readonly targetBytes = TARGET_BYTES,
  ) {
    this.checkpointer = new WalCheckpointer(path);
    const wal = `${path}-wal`;
    this.growth = new WalGrowth(() => statSync(wal, { throwIfNoEntry: false })?.size ?? 0, targetBytes);
    this.commitsPerCycle = Math.max(1, Math.round((FIRST_CYCLE_COMMITS * targetBytes) / TARGET_BYTES));
  }

  /**
   * The page size of the database the commits go to (4 KiB until told), read again whenever the file
   * is opened: a snapshot installed from another voter may have pages of another size.
   */
  usePageSize(pageBytes: number): void {
    this.frameBytes = walFrameBytes(pageBytes);
  }

  /**
   * Called on the applying thread right after each commit, with no transaction open. Throws once a
   * background checkpoint has failed: after a failed fsync nothing written since can be trusted.
   */
  afterCommit(db: Database.Database): void {
    if (this.closed) return;
    if (this.failure !== null) throw failed(this.failure);
    // Sized after every commit, whatever the phase, so that growth is always that of the last commit.
    const outgrown = this.growth.outgrown();
    if (this.phase === "final") {
      let row: CheckpointRow | undefined;
      try {
        [row] = db.pragma("wal_checkpoint(PASSIVE)") as CheckpointRow[];
      } catch (error) {
        throw this.fail(error);
      }
      this.phase = "idle";
      this.commits = 0;
      this.stats.cycles++;
      if (row !== undefined && row.checkpointed === row.log) this.stats.restarts++;
      return;
    }
    if (this.phase !== "idle") return;
    if (++this.commits < this.commitsPerCycle && !outgrown) return;
    this.phase = "bulk";
    const commits = this.commits;
    this.running = this.checkpointer.checkpoint().then(
      (r) => {
        const scaled = Math.round((commits * this.targetBytes) / Math.max(1, r.log * this.frameBytes));
        this.commitsPerCycle = Math.min(MAX_CYCLE_COMMITS, Math.max(1, scaled));
        const backlog = r.log - r.checkpointed;
        if (backlog * this.frameBytes > FINAL_MAX_BACKLOG_BYTES) {
          this.stats.deferred++;
          this.commits = 0;
          this.phase = "idle";
          return;
        }
        this.stats.finalBacklogMax = Math.max(this.stats.finalBacklogMax, backlog);
        this.phase = "final";
      },
      (error: unknown) => {
        if (!this.closed) this.fail(error);
        this.phase = "idle";
      },
    );
    void this.running.finally(() => {
      this.running = null;
    });
  }

  /**
   * Calls `listener` once, when a checkpoint fails: at once, not at the next commit, which an idle voter
   * may never make, so that the voter stops while it has nothing to apply too.
   */
  onFailure(listener: (err: InternalError) => void): void {
    this.failureListeners.push(listener);
  }

  private fail(error: unknown): InternalError {
    if (this.failure === null) {
      this.failure = error instanceof Error ? error : new Error(String(error));
      for (const listener of this.failureListeners) listener(failed(this.failure));
    }
    return failed(this.failure);
  }

  /** A worker pass is under way; the applying thread never waits for it. */
  get busy(): boolean {
    return this.running !== null;
  }

  /**
   * Blocks until no worker checkpoint has the database open, before the file is replaced (a snapshot
   * install); the cycle then carries on against the new file.
   */
  quiesce(): void {
    this.checkpointer.waitIdle();
  }

  /** Waits for a running checkpoint and stops the worker; before the database's last connection closes. */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
    await this.checkpointer.close();
  }
}

function failed(cause: Error): InternalError {
  return new InternalError("checkpointing the state database failed; the voter must restart", {
    reason: "StateCheckpointFailed",
    cause,
  });
}
