import { randomBytes } from "node:crypto";
import { UnavailableError } from "@keyload/contract";
import type { NodeId, ReadFailure, ReadState } from "../raft/types.js";
import { settleApplied } from "./apply-waiters.js";
import { type DriverTimers, NODE_TIMERS, type TimerHandle } from "./driver-timers.js";

interface ReadWaiter {
  /** The read's index once a leader confirmed it; 0 before. */
  index: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly timer: TimerHandle;
}

/**
 * Linearizable reads (ReadIndex) in their two stages: waiting, by request ID, for a leader to confirm
 * them, then, with the confirmed index, for the state machine to apply it. Each fails with
 * Unavailable when no leader confirms it in time.
 */
export class ReadWaiters {
  private readonly pending = new Map<string, ReadWaiter>();
  private confirmed: ReadWaiter[] = [];
  private nextId = 1;

  /**
   * Request IDs name `id`, this voter's member ID, and a random tag of this process: a leader may still
   * answer a read this voter asked before it restarted, with that read's lower index, and such an
   * answer must not pass for one to a new read (etcd's read IDs are unique across restarts too).
   */
  constructor(
    private readonly id: NodeId,
    private readonly timers: DriverTimers = NODE_TIMERS,
    private readonly incarnation = randomBytes(6).toString("base64url"),
  ) {}

  /** A request ID for the next read; taken before the core sees the read, whether it accepts it or not. */
  nextRequestId(): string {
    return `${this.id}-${this.incarnation}-${this.nextId++}`;
  }

  /** Waits for the read `requestId` to be confirmed and applied, for at most `timeoutMs`. */
  wait(requestId: string, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        this.pending.delete(requestId);
        this.confirmed = this.confirmed.filter((w) => w.timer !== timer);
        reject(new UnavailableError("no leader confirmed the read in time", { reason: "ReadIndexTimeout" }));
      }, timeoutMs);
      this.pending.set(requestId, { index: 0, resolve, reject, timer });
    });
  }

  /** Moves the reads a leader confirmed on to waiting for their index. */
  confirm(states: readonly ReadState[]): void {
    for (const rs of states) {
      const w = this.pending.get(rs.requestId);
      if (!w) continue;
      this.pending.delete(rs.requestId);
      w.index = rs.index;
      this.confirmed.push(w);
    }
  }

  /** Fails the reads that can no longer be confirmed. */
  refuse(failures: readonly ReadFailure[]): void {
    for (const rf of failures) {
      const w = this.pending.get(rf.requestId);
      if (!w) continue;
      this.pending.delete(rf.requestId);
      this.timers.clearTimeout(w.timer);
      w.reject(new UnavailableError(`the read could not be confirmed: ${rf.reason}`, { reason: rf.reason }));
    }
  }

  noneConfirmed(): boolean {
    return this.confirmed.length === 0;
  }

  /** Whether a confirmed read waits for an index beyond `applied`. */
  waitsBeyond(applied: number): boolean {
    return this.confirmed.some((w) => w.index > applied);
  }

  /** Serves the confirmed reads whose index is applied. */
  settle(applied: number): void {
    this.confirmed = settleApplied(this.confirmed, applied, this.timers);
  }

  /** Fails every read, confirmed or not, with `error`. */
  rejectAll(error: Error): void {
    for (const w of this.pending.values()) {
      this.timers.clearTimeout(w.timer);
      w.reject(error);
    }
    this.pending.clear();
    for (const w of this.confirmed) {
      this.timers.clearTimeout(w.timer);
      w.reject(error);
    }
    this.confirmed = [];
  }
}
