import type { ConfState, Entry, HardState, SnapshotMeta } from "../raft/types.js";
import type { StoreOp } from "./durable-log-store.js";
import type { SnapshotRecord } from "./log-database.js";
import type { LogStore } from "./log-store.js";
import type { SnapshotFile } from "./snapshot-file-store.js";
import { SnapshotPolicy } from "./snapshot-policy.js";
import type { SnapshotSource } from "./snapshot-source.js";
import { StorageClosedError, StorageFailedError } from "./storage-errors.js";
import { checkWriteShape } from "./write-shape.js";

/**
 * What one Ready asks to persist. The snapshot is the sealed file its bytes were received into
 * (`snapshotFiles.receive`), never the bytes themselves.
 */
export interface LogWrite {
  readonly snapshot: SnapshotFile | null;
  readonly entries: readonly Entry[];
  readonly hardState: HardState | null;
}

/**
 * The configuration at an index the state machine has applied, for the snapshot there; asynchronous,
 * since the driver may learn it only once the core has advanced past that index.
 */
export type ConfAt = (index: number) => ConfState | Promise<ConfState>;

interface Pending {
  readonly write: LogWrite | null;
  readonly record: SnapshotRecord | null;
  /** False for a write that needs no fsync of its own: it resolves once committed to the WAL. */
  readonly durable: boolean;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

/**
 * The write side of a DurableLogStore, with group commit: writes arriving while an fsync is running
 * queue up, and when it completes they all go into ONE transaction made durable by ONE fsync. A
 * write's promise resolves only after the fsync covering it, so the driver sends a Ready's messages
 * (and calls `advance`) only once it resolves; writes are applied in the order they were made. The one
 * exception is `writeCommitIndex`, which never waits for an fsync.
 *
 * The event loop is held by each transaction's writes into the page cache and by that group's one
 * fsync, unless the store runs its fsyncs on the thread pool (DurableLogStore.setFsyncSite). A failed
 * transaction or fsync stops the writer: the writes concerned and all later ones reject with the
 * error (StorageFailedError), and the node must restart.
 */
export class DurableLogWriter<S extends LogStore = LogStore> {
  private queue: Pending[] = [];
  /** Callers of syncStarted waiting for the queued writes' fsync to be under way. */
  private queueSyncWaiters: (() => void)[] = [];
  /** The group being written, if any; the next group starts once it is acknowledged. */
  private flushing: Promise<void> | null = null;
  /** Callers of syncStarted waiting for the flushing group's fsync; null once it is under way. */
  private groupSyncWaiters: (() => void)[] | null = null;
  private scheduled = false;
  private snapshotting = false;
  /** Set when a write failed for a reason other than a refusal: the writer is stopped for good. */
  private failure: Error | null = null;
  readonly policy: SnapshotPolicy;

  constructor(
    readonly store: S,
    policy: SnapshotPolicy = new SnapshotPolicy(),
    /** Runs a callback in a later turn of the event loop: the simulator's virtual turns there. */
    private readonly defer: (callback: () => void) => void = setImmediate,
  ) {
    this.policy = policy;
  }

  /**
   * Persists one Ready's snapshot, entries and hard state atomically. Throws at once when the write is
   * malformed in itself; rejects when the log refuses it (a gap, a stale snapshot, a rewritten vote).
   */
  write(write: LogWrite): Promise<void> {
    const shape = checkWriteShape(write);
    if (shape !== null) throw shape;
    return this.enqueue(write, null, true);
  }

  /**
   * Records a hard state whose term and vote are already durable, i.e. only the commit index moved, in
   * the next group without waiting for (or, alone, causing) an fsync: it resolves once the group's
   * transaction is committed and becomes durable with the next fsync. Raft needs no durable commit index
   * (a voter that loses it learns it again from the leader; etcd's MustSync makes the same choice), and
   * a commit index lost in a crash lower than what the state machine applied is raised again at start
   * (see raiseCommitToApplied). Writes stay in order: a later durable write's fsync covers this one.
   * The driver uses it when it stops, for the commit index its Readies left unwritten.
   */
  writeCommitIndex(hardState: HardState): Promise<void> {
    return this.enqueue({ snapshot: null, entries: [], hardState }, null, false);
  }

  /**
   * Resolves once the writes queued so far are on their way to disk: their group committed to the
   * page cache and its fsync issued. With the store's fsyncs on the thread pool the fsync is then
   * running off the event loop, so work the caller does now overlaps it rather than delaying or
   * following it; on the event loop it has already returned. Resolves at once when nothing is queued
   * or being written; never rejects (a failed write rejects its own promise).
   */
  syncStarted(): Promise<void> {
    const waiters = this.queue.length > 0 ? this.queueSyncWaiters : this.groupSyncWaiters;
    if (waiters === null) return Promise.resolve();
    return new Promise((resolve) => waiters.push(resolve));
  }

  /**
   * Copies the state machine through `source`, seals the copy and records it durably as the log's
   * snapshot, for a follower that needs one (`store.snapshotWanted`); `confAt` gives the configuration
   * at the index the copy covers. The log is not compacted here.
   */
  async createSnapshot(source: SnapshotSource, confAt: ConfAt): Promise<SnapshotMeta> {
    if (this.failure !== null) throw this.failure;
    const temp = this.store.snapshotFiles.tempPath();
    let meta: SnapshotMeta;
    try {
      const taken = await source.createSnapshotFile(temp);
      const refused = this.store.localSnapshotRefusal(taken.index, taken.term, true);
      if (refused !== null) throw refused;
      meta = { index: taken.index, term: taken.term, conf: await confAt(taken.index) };
    } catch (err) {
      await this.store.snapshotFiles.discardTemp(temp);
      throw err;
    }
    const file = await this.store.snapshotFiles.adopt(temp, meta);
    await this.enqueue(null, file, true);
    return file.meta;
  }

  /**
   * When the policy says a snapshot is due for `appliedIndex`: has `source` make the state durable,
   * records the position it holds as the log's snapshot point, with no file, then compacts the log
   * behind it, keeping the policy's retained entries. Nothing is copied: the state database is the
   * snapshot, and a copy is made only when a follower needs one (docs/decisions/0021-lazy-snapshots.md).
   * Returns the point recorded, or null when none was due or one is being recorded.
   */
  async maybeSnapshot(
    source: SnapshotSource,
    confAt: ConfAt,
    appliedIndex: number,
  ): Promise<SnapshotMeta | null> {
    if (this.snapshotting || !this.policy.due(this.store, appliedIndex)) return null;
    this.snapshotting = true;
    try {
      if (this.failure !== null) throw this.failure;
      const { index, term } = await source.durablePosition();
      const meta: SnapshotMeta = { index, term, conf: await confAt(index) };
      await this.enqueue(null, { meta, file: null, size: 0, checksum: 0 }, true);
      this.store.compact(Math.min(this.policy.compactionIndex(index), this.store.snapshotIndex()));
      return meta;
    } finally {
      this.snapshotting = false;
    }
  }

  /** Waits for every queued write, then closes the store; later writes fail with StorageClosedError. */
  async close(): Promise<void> {
    while (this.flushing !== null || this.scheduled) {
      await (this.flushing ?? new Promise<void>((resolve) => this.defer(resolve)));
    }
    this.failure ??= new StorageClosedError();
    await this.store.close();
  }

  private enqueue(write: LogWrite | null, record: SnapshotRecord | null, durable: boolean): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ write, record, durable, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Starts the next group in a later turn of the event loop (setImmediate, not a microtask): writes
   * made in this turn and those the I/O polled meanwhile brings in all join it, and a driver awaiting
   * write after write still lets the event loop run between groups.
   */
  private schedule(): void {
    if (this.scheduled || this.flushing !== null || this.queue.length === 0) return;
    this.scheduled = true;
    this.defer(() => {
      this.scheduled = false;
      const group = this.queue;
      this.queue = [];
      this.groupSyncWaiters = this.queueSyncWaiters;
      this.queueSyncWaiters = [];
      this.flushing = this.flush(group).finally(() => {
        this.releaseSyncWaiters();
        this.flushing = null;
        this.schedule();
      });
    });
  }

  private async flush(group: Pending[]): Promise<void> {
    let ops: (StoreOp | null)[];
    let results: (Error | null)[];
    try {
      ops = group.map((p) => this.toOp(p));
      await this.store.writeGate();
      results = this.store.commit(ops.filter((op): op is StoreOp => op !== null));
    } catch (err) {
      this.failAll(group, err);
      return;
    }
    const accepted: Pending[] = [];
    let r = 0;
    for (let i = 0; i < group.length; i++) {
      const p = group[i]!;
      const op = ops[i];
      if (op === null || op === undefined) continue;
      const refused = results[r++] ?? null;
      if (refused === null) {
        if (p.durable) accepted.push(p);
        else p.resolve();
        continue;
      }
      if (op.snapshot !== null) await this.store.discardSnapshotFile(op.snapshot);
      p.reject(refused);
    }
    if (accepted.length === 0) return;
    try {
      const synced = this.store.sync();
      this.releaseSyncWaiters();
      await synced;
    } catch (err) {
      this.failAll(accepted, err);
      return;
    }
    for (const p of accepted) p.resolve();
  }

  /** The store op for a queued write. */
  private toOp(p: Pending): StoreOp {
    if (p.record !== null) return { kind: "record-snapshot", snapshot: p.record };
    const w = p.write!;
    return { kind: "persist", snapshot: w.snapshot, entries: w.entries, hardState: w.hardState };
  }

  /**
   * After a failed commit, fsync or snapshot file write nothing since the last good fsync can be
   * trusted: everything queued fails, and so does every later write.
   */
  private failAll(group: readonly Pending[], err: unknown): void {
    const error = err instanceof Error ? err : new StorageFailedError(String(err));
    this.failure ??= error;
    for (const p of group) p.reject(error);
    const rest = this.queue;
    this.queue = [];
    for (const p of rest) p.reject(error);
    const waiters = this.queueSyncWaiters;
    this.queueSyncWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private releaseSyncWaiters(): void {
    const waiters = this.groupSyncWaiters;
    this.groupSyncWaiters = null;
    for (const resolve of waiters ?? []) resolve();
  }
}
