import type { Entry } from "../../raft/types.js";
import type { ApplyResult } from "../../state/apply-result.js";
import type { DriverStateMachine, StatePosition } from "../../voter/driver-state-machine.js";
import { entryDigest } from "../digest.js";
import { SimStateMachine } from "../sim-state-machine.js";
import type { SimStateDisk } from "./sim-state-disk.js";

/** Where snapshot files live for the state machine: the log's simulated disk. */
export interface StateFiles {
  readFile(path: string): Uint8Array;
  writeTemp(path: string, data: Uint8Array): void;
}

/** What the simulator watches of one node's applies. */
export interface StateObserver {
  /** `entry` applied, its content's digest `digest`, the chain after it `chain`. */
  applied(entry: Entry, digest: number, chain: number): void;
  /** The state was replaced by a snapshot's. */
  restored(index: number, term: number, chain: number): void;
}

/** The result a simulated command answers with: the entry's term and content digest. */
export interface SimCommandResult {
  readonly term: number;
  readonly digest: number;
}

/**
 * The simulated state machine one driver applies to in one process life, with the state machine's
 * rules (entries in order, replays skipped, a gap refused) and its durability (SimStateDisk): copies
 * and durable positions take a while, on the process's timers, and fsync as they end.
 */
export class SimDriverState implements DriverStateMachine {
  private sm: SimStateMachine;
  private readonly failureListeners: ((err: Error) => void)[] = [];
  /** Set by `failNextApply`: the next batch fails with it, as a failed commit of the database would. */
  private applyFault: Error | null = null;

  constructor(
    private readonly disk: SimStateDisk,
    private readonly files: StateFiles,
    private readonly observer: StateObserver,
    /** Resolves after an fsync's time on this process's clock. */
    private readonly fsyncDelay: () => Promise<void>,
    /**
     * Whether the next copy is taken as it ends rather than as it starts: the state machine's copy
     * runs beside the applies, so it may hold any state from the one asked for on.
     */
    private readonly copiesLate: () => boolean = () => false,
  ) {
    this.sm = disk.latest();
  }

  /** The state as applied so far, for reads. */
  get live(): SimStateMachine {
    return this.sm;
  }

  applied(): StatePosition {
    return { index: this.sm.applied, term: this.sm.term };
  }

  applyBatch(entries: readonly Entry[]): ApplyResult[] {
    const fault = this.applyFault;
    if (fault !== null) throw fault;
    const results: ApplyResult[] = [];
    let appliedSome = false;
    for (const entry of entries) {
      if (entry.index <= this.sm.applied) {
        results.push({ type: "skipped", entryIndex: entry.index });
        continue;
      }
      if (entry.index !== this.sm.applied + 1) {
        throw new Error(`entry ${entry.index} does not follow applied index ${this.sm.applied}`);
      }
      const digest = entryDigest(entry);
      this.sm.apply(entry, digest);
      this.observer.applied(entry, digest, this.sm.digest);
      appliedSome = true;
      if (entry.type === "normal" && entry.data.byteLength > 0) {
        const result: SimCommandResult = { term: entry.term, digest };
        results.push({
          type: "command",
          entryIndex: entry.index,
          tenant: null,
          commandId: null,
          duplicate: false,
          outcome: { status: "committed", index: entry.index, result },
        });
      } else {
        results.push({ type: "noop", entryIndex: entry.index });
      }
    }
    if (appliedSome) this.disk.applied(this.sm);
    return results;
  }

  restoreFromSnapshot(path: string): StatePosition {
    const data = this.files.readFile(path);
    const index = data.byteLength >= 4 ? new DataView(data.buffer, data.byteOffset).getUint32(0) : 0;
    const sm = SimStateMachine.restore({ index, term: 0, conf: { voters: [] } }, data);
    this.sm = sm;
    this.disk.replaced(sm);
    this.observer.restored(sm.applied, sm.term, sm.digest);
    return this.applied();
  }

  async createSnapshot(path: string): Promise<StatePosition> {
    const late = this.copiesLate();
    let copy = this.sm.copy();
    if (late) {
      await this.fsyncDelay();
      copy = this.sm.copy();
    }
    this.files.writeTemp(path, copy.serialize());
    await this.fsyncDelay();
    this.disk.syncedTo(copy.applied);
    return { index: copy.applied, term: copy.term };
  }

  async durablePosition(): Promise<StatePosition> {
    const position = this.applied();
    await this.fsyncDelay();
    this.disk.syncedTo(position.index);
    return position;
  }

  /** The next batch, and every one after it, fails with `err` without applying anything. */
  failNextApply(err: Error): void {
    this.applyFault = err;
  }

  onFailure(listener: (err: Error) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * The state fails off the apply path (a grouped commit or an fsync in the background): its
   * listeners hear `err` once, and every later batch fails with it.
   */
  failNow(err: Error): void {
    if (this.applyFault !== null) return;
    this.applyFault = err;
    for (const listener of this.failureListeners) listener(err);
  }
}
