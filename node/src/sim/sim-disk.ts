import type { SeededRandom } from "../raft/seeded-random.js";
import type { Entry, HardState, Snapshot } from "../raft/types.js";
import { LazySnapshotStorage } from "./lazy-snapshot-storage.js";

export interface DiskFaults {
  readonly minSyncDelay: number;
  readonly maxSyncDelay: number;
  /** Chance that one fsync stalls up to `stallDelay` longer. */
  readonly stallRate: number;
  readonly stallDelay: number;
}

/** What one Ready asks to persist, in the order it must reach the disk. */
export interface DiskWrite {
  readonly snapshot: Snapshot | null;
  /** The snapshot's bytes, as received into a temporary file; absent while the write is only planned. */
  readonly snapshotData?: Uint8Array | null;
  readonly entries: readonly Entry[];
  readonly hardState: HardState | null;
}

/**
 * One node's disk: `storage` is the durable image (what survives a crash and what the core reads),
 * and at most one written-but-unsynced batch sits beside it until its fsync completes. A crash
 * before then loses the batch whole. A new disk is empty: it holds no configuration until a bootstrap
 * or the leader's log gives it one. A `lazy` disk keeps local snapshots as points (LazySnapshotStorage).
 */
export class SimDisk {
  readonly storage: LazySnapshotStorage;
  private unsynced: DiskWrite | null = null;

  constructor(
    private readonly random: SeededRandom,
    private faults: DiskFaults,
    lazy = false,
  ) {
    this.storage = new LazySnapshotStorage(lazy);
  }

  setFaults(faults: DiskFaults): void {
    this.faults = faults;
  }

  get pending(): DiskWrite | null {
    return this.unsynced;
  }

  /** Buffers a write and returns how long its fsync takes. */
  write(write: DiskWrite): number {
    if (this.unsynced !== null) throw new Error("a write is already waiting for its fsync");
    this.unsynced = write;
    const f = this.faults;
    let delay = f.minSyncDelay + this.random.nextInt(f.maxSyncDelay - f.minSyncDelay + 1);
    if (f.stallRate > 0 && this.random.chance(f.stallRate)) delay += 1 + this.random.nextInt(f.stallDelay);
    return delay;
  }

  /** The fsync completed: the buffered write becomes durable. */
  sync(): void {
    const write = this.unsynced;
    if (write === null) return;
    this.unsynced = null;
    if (write.snapshot !== null) {
      if (!write.snapshotData)
        throw new Error(`snapshot ${write.snapshot.meta.index} is written without its bytes`);
      this.storage.applySnapshot(write.snapshot, write.snapshotData);
    }
    this.storage.append(write.entries);
    if (write.hardState !== null) this.storage.setHardState(write.hardState);
  }

  /**
   * A crash. On power loss whatever was not synced is gone; a process killed with the machine still up
   * (`keepUnsynced`) leaves its written batch to reach the disk all the same: durable, though the node
   * never acted on it. Returns the lost write, if any.
   */
  crash(keepUnsynced = false): DiskWrite | null {
    if (keepUnsynced) this.sync();
    const lost = this.unsynced;
    this.unsynced = null;
    this.storage.crash();
    return lost;
  }
}

/** A write as a trace shows what a crash lost of it. */
export function describeWrite(write: DiskWrite): string {
  const parts: string[] = [];
  if (write.snapshot !== null) parts.push(`snapshot ${write.snapshot.meta.index}`);
  const first = write.entries[0];
  const last = write.entries[write.entries.length - 1];
  if (first !== undefined && last !== undefined) parts.push(`entries ${first.index}..${last.index}`);
  if (write.hardState !== null) {
    const hs = write.hardState;
    parts.push(`hard state t${hs.term}/v=${hs.vote ?? "-"}/c${hs.commit}`);
  }
  return parts.join(", ");
}
