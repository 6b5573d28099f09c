import { crc32c } from "../../checksum/crc32c.js";
import { LogCompactedError, LogUnavailableError, RaftInvariantError } from "../../raft/errors.js";
import { limitSize } from "../../raft/log-storage.js";
import type { ConfState, Entry, HardState, Snapshot } from "../../raft/types.js";
import { checkInteger } from "../../storage/durable-log-options.js";
import type { StoreOp } from "../../storage/durable-log-store.js";
import type { SnapshotRecord } from "../../storage/log-database.js";
import { localSnapshotRefusal, storeOpRefusal } from "../../storage/log-refusals.js";
import type { LogStore } from "../../storage/log-store.js";
import type { SnapshotFile } from "../../storage/snapshot-file-store.js";
import {
  StorageArgumentError,
  StorageClosedError,
  StorageCorruptionError,
  StorageError,
  StorageFailedError,
} from "../../storage/storage-errors.js";
import type { LogImage } from "./log-image.js";
import type { SimLogDisk } from "./sim-log-disk.js";
import { simSnapshotPath } from "./sim-log-disk.js";
import { SimSnapshotFiles } from "./sim-snapshot-files.js";

/** Where a sync runs its fsyncs; named through the interface, as the simulator may not import `fs`. */
type FsyncSite = Parameters<LogStore["setFsyncSite"]>[0];

export interface SimLogStoreOptions {
  /** Runs `callback` after `delay` of simulated time: the simulator's event queue. */
  readonly schedule: (delay: number, callback: () => void) => void;
  /** How long the next sync's fsync takes. */
  readonly syncDelay: () => number;
}

/**
 * `DurableLogStore` as seen through `LogStore`, over a simulated disk: the same reads, refusals,
 * lazy snapshots and errors, with commits visible at once and durable only once a `sync` completes in
 * simulated time, so a crash before then loses them (SimLogDisk). One instance per process life: a
 * restart opens a new one over the same disk. Nothing here touches a real file or the real clock.
 */
export class SimLogStore implements LogStore {
  readonly snapshotFiles: SimSnapshotFiles;
  private readonly life: number;
  /** The log as committed: what every read answers. */
  private readonly image: LogImage;
  private stopped: StorageError | null = null;
  /** Set by `failNextSync`: the next fsync to complete fails with it instead. */
  private syncFault: StorageError | null = null;
  private syncing: Promise<void> | null = null;
  /** The core asked for a snapshot while the log stood on a point with no file (snapshotWanted). */
  private wanted = false;
  /** Superseded snapshot files, deletable once the commit `seq` that superseded them is durable. */
  private retired: { file: string; seq: number }[] = [];
  private readonly failureListeners: ((err: StorageError) => void)[] = [];
  /** Recorded for tests; the simulated fsync takes its time wherever it runs. */
  fsyncSite: FsyncSite = "event-loop";

  constructor(
    readonly disk: SimLogDisk,
    private readonly options: SimLogStoreOptions,
  ) {
    const { life, image } = disk.openLife();
    this.life = life;
    this.image = image;
    this.snapshotFiles = new SimSnapshotFiles(disk, life);
    try {
      this.checkAtOpen();
    } catch (err) {
      // A failed open leaves the disk free for the next attempt, as the real one closes its files.
      disk.closeLife(life);
      throw err;
    }
  }

  // --- LogStorage -------------------------------------------------------------------------------

  initialState(): { hardState: HardState; conf: ConfState } {
    this.checkUsable();
    return { hardState: this.image.hardState, conf: this.image.snapshot.meta.conf };
  }

  entries(lo: number, hi: number, maxBytes: number): readonly Entry[] {
    this.checkUsable();
    checkInteger("lo", lo);
    checkInteger("hi", hi);
    if (Number.isNaN(maxBytes)) throw new StorageArgumentError("maxBytes must be a number");
    const offset = this.image.startIndex;
    const last = this.image.lastIndex;
    if (lo <= offset) throw new LogCompactedError(lo, offset + 1);
    if (hi > last + 1) throw new LogUnavailableError(hi - 1, last);
    if (lo >= hi) return [];
    return limitSize(this.image.slice(lo, hi), maxBytes);
  }

  term(index: number): number {
    this.checkUsable();
    checkInteger("index", index);
    const offset = this.image.startIndex;
    if (index < offset) throw new LogCompactedError(index, offset + 1);
    if (index > this.image.lastIndex) throw new LogUnavailableError(index, this.image.lastIndex);
    return this.image.term(index);
  }

  firstIndex(): number {
    this.checkUsable();
    return this.image.startIndex + 1;
  }

  lastIndex(): number {
    this.checkUsable();
    return this.image.lastIndex;
  }

  /** As DurableLogStore: null at a snapshot point with no file, which marks a copy wanted. */
  snapshot(): Snapshot | null {
    this.checkUsable();
    const s = this.image.snapshot;
    if (s.file === null && s.meta.index > 0) {
      this.wanted = true;
      return null;
    }
    return { meta: s.meta, size: s.size, checksum: s.checksum };
  }

  snapshotWanted(): boolean {
    const s = this.image.snapshot;
    return this.wanted && s.file === null && s.meta.index > 0;
  }

  // --- Snapshot files and policy ----------------------------------------------------------------

  currentSnapshot(): SnapshotFile | null {
    this.checkUsable();
    const s = this.image.snapshot;
    return s.file === null ? null : { meta: s.meta, file: s.file, size: s.size, checksum: s.checksum };
  }

  /** A virtual path (`sim:/snapshots/...`): read it with `disk.readFile`. */
  currentSnapshotPath(): string | null {
    const snap = this.currentSnapshot();
    return snap === null ? null : simSnapshotPath(snap.file);
  }

  verifiedSnapshotPath(): string | null {
    const snap = this.currentSnapshot();
    if (snap === null) return null;
    const path = simSnapshotPath(snap.file);
    const bytes = this.sealedOrCorrupt(snap);
    if (bytes.byteLength !== snap.size) throw sizeMismatch(path, snap, bytes.byteLength);
    if (crc32c(bytes) !== snap.checksum) {
      throw new StorageCorruptionError(path, snap.meta.index, "snapshot file checksum mismatch");
    }
    return path;
  }

  snapshotIndex(): number {
    this.checkUsable();
    return this.image.snapshot.meta.index;
  }

  byteSize(lo: number, hi: number): number {
    this.checkUsable();
    checkInteger("lo", lo);
    checkInteger("hi", hi);
    const first = this.image.startIndex + 1;
    const end = this.image.lastIndex + 1;
    if (lo < first || hi > end) {
      throw new StorageArgumentError(
        `range [${lo}, ${hi}) is not within the retained log [${first}, ${end})`,
      );
    }
    return this.image.bytes(lo, hi);
  }

  // --- Write side -------------------------------------------------------------------------------

  /** The simulated store runs no checkpoints: nothing ever holds commits back. */
  writeGate(): Promise<void> | null {
    return null;
  }

  commit(ops: readonly StoreOp[]): (Error | null)[] {
    this.checkUsable();
    const results: (Error | null)[] = [];
    const accepted: StoreOp[] = [];
    for (const op of ops) {
      const refused = this.refusal(op);
      results.push(refused);
      if (refused !== null) continue;
      this.apply(op);
      accepted.push(op);
    }
    if (accepted.length === 0) return results;
    this.image.seq++;
    this.disk.commitOps(this.life, accepted);
    return results;
  }

  /**
   * Makes everything committed so far durable when the simulated fsync completes, never in the turn
   * it is called in: a crash meanwhile loses it. The promise of a process that crashed meanwhile
   * never settles, as a dead process acknowledges nothing.
   */
  async sync(): Promise<void> {
    this.checkUsable();
    if (this.syncing) await this.syncing.catch(() => undefined);
    this.checkUsable();
    const seq = this.image.seq;
    const covers = this.disk.committedWrites;
    const done = new Promise<void>((resolve, reject) => {
      this.options.schedule(this.options.syncDelay(), () => {
        if (!this.disk.isLive(this.life)) return;
        if (this.syncFault !== null) this.failNow(this.syncFault);
        if (this.stopped !== null && !(this.stopped instanceof StorageClosedError)) {
          reject(this.stopped);
          return;
        }
        this.disk.syncTo(covers);
        resolve();
      });
    });
    try {
      this.syncing = done;
      await done;
    } finally {
      this.syncing = null;
    }
    this.removeRetired(seq);
  }

  setFsyncSite(site: FsyncSite): void {
    this.fsyncSite = site;
  }

  /** As DurableLogStore: only the compaction point moves, durable with the next sync (or lost, harmlessly). */
  compact(index: number): void {
    this.checkUsable();
    checkInteger("index", index);
    const offset = this.image.startIndex;
    if (index <= offset) return;
    const snap = this.image.snapshot.meta.index;
    if (index > snap) throw new RaftInvariantError(`compaction to ${index} passes the snapshot at ${snap}`);
    this.image.compact(index);
    this.disk.commitCompaction(this.life, index);
  }

  localSnapshotRefusal(index: number, term: number, withFile: boolean): Error | null {
    this.checkUsable();
    return localSnapshotRefusal(this.image, index, term, withFile);
  }

  async discardSnapshotFile(snap: SnapshotFile | SnapshotRecord): Promise<void> {
    if (snap.file !== null && snap.file !== this.image.snapshot.file && this.disk.isLive(this.life)) {
      this.disk.removeSealed(snap.file);
    }
  }

  /**
   * Waits for a running sync, then makes everything committed durable, as the real close's final
   * checkpoint does; a store that failed first makes nothing more durable (fail-stop).
   */
  async close(): Promise<void> {
    if (this.stopped instanceof StorageClosedError) return;
    const failed = this.stopped !== null;
    this.stopped = new StorageClosedError();
    await this.syncing?.catch(() => undefined);
    if (!this.disk.isLive(this.life)) return;
    if (!failed) {
      this.disk.syncTo(this.disk.committedWrites);
      this.removeRetired(this.image.seq);
    }
    this.disk.closeLife(this.life);
  }

  onFailure(listener: (err: StorageError) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * Fails the store as a background I/O failure would (fault injection): every later call throws
   * `err` (a StorageFailedError when it is not a StorageError), the listeners are told once.
   */
  /**
   * The next fsync to complete fails (an EIO): nothing it covers becomes durable, the writes waiting
   * on it reject, and the store fails as `failNow` does.
   */
  failNextSync(err: StorageError): void {
    this.syncFault = err;
  }

  failNow(err: unknown): StorageError {
    if (this.stopped === null) {
      const failure =
        err instanceof StorageError
          ? err
          : new StorageFailedError(`simulated failure: ${String(err)}`, { cause: err });
      this.stopped = failure;
      for (const listener of this.failureListeners) listener(failure);
    }
    return this.stopped;
  }

  // --- Internals --------------------------------------------------------------------------------

  /** As the real open: the committed index lies in the log, and the snapshot's file is there with its size. */
  private checkAtOpen(): void {
    const s = this.image.snapshot;
    if (this.image.hardState.commit > this.image.lastIndex) {
      throw new StorageCorruptionError(
        "sim:/raft-log",
        this.image.lastIndex + 1,
        `the log ends at ${this.image.lastIndex} but index ${this.image.hardState.commit} was committed`,
      );
    }
    if (s.file === null) return;
    const snap = { meta: s.meta, file: s.file, size: s.size, checksum: s.checksum };
    const size = this.sealedOrCorrupt(snap).byteLength;
    if (size !== s.size) throw sizeMismatch(simSnapshotPath(s.file), snap, size);
  }

  private sealedOrCorrupt(snap: SnapshotFile): Uint8Array {
    const bytes = this.disk.sealedFile(snap.file);
    if (bytes === undefined) {
      throw new StorageCorruptionError(
        simSnapshotPath(snap.file),
        snap.meta.index,
        "the snapshot file the log refers to is missing",
      );
    }
    return bytes;
  }

  /** Why `op` cannot be applied to the log as it stands now: the same rules as DurableLogStore's. */
  private refusal(op: StoreOp): Error | null {
    return storeOpRefusal(this.image, op);
  }

  private apply(op: StoreOp): void {
    const replaces = op.kind === "record-snapshot" || op.snapshot !== null;
    if (replaces && this.image.snapshot.file !== null) {
      this.retired.push({ file: this.image.snapshot.file, seq: this.image.seq + 1 });
    }
    this.image.apply(op);
    // As the real store: a sealed snapshot, copied or received, answers the core's request.
    if (op.kind === "record-snapshot" ? op.snapshot.file !== null : op.snapshot !== null) this.wanted = false;
  }

  /** Deletes the superseded files once the commit that superseded them is durable. */
  private removeRetired(syncedSeq: number): void {
    const due = this.retired.filter((r) => r.seq <= syncedSeq);
    if (due.length === 0) return;
    this.retired = this.retired.filter((r) => r.seq > syncedSeq);
    for (const r of due) this.disk.removeSealed(r.file);
  }

  private checkUsable(): void {
    if (this.stopped !== null) throw this.stopped;
    this.disk.checkLife(this.life);
  }
}

function sizeMismatch(path: string, snap: SnapshotFile, size: number): StorageCorruptionError {
  return new StorageCorruptionError(
    path,
    snap.meta.index,
    `snapshot file holds ${size} bytes, ${snap.size} recorded`,
  );
}
