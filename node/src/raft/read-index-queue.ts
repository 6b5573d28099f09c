import type { NodeId } from "./types.js";

/** A read waiting for a quorum to confirm that the leader was still the leader when it arrived. */
export interface PendingRead {
  readonly requestId: string;
  /** The follower that asked, or null for the leader's own read. */
  readonly from: NodeId | null;
  /** The commit index when the read arrived: serving at or after it is linearizable. */
  readonly index: number;
  /** The heartbeat round that must be acknowledged by a quorum. */
  readonly round: number;
}

/**
 * The leader's ReadIndex bookkeeping. Reads are confirmed in FIFO order: a quorum acknowledging
 * round r confirms every read of round r or earlier.
 */
export class ReadIndexQueue {
  private queue: PendingRead[] = [];
  private head = 0;
  /** Reads that arrived before the leader committed an entry of its own term. */
  deferred: { requestId: string; from: NodeId | null }[] = [];
  round = 0;

  push(read: PendingRead): void {
    this.queue.push(read);
  }

  hasPending(): boolean {
    return this.head < this.queue.length;
  }

  /** Removes and returns every read whose round is at most `round`. */
  confirm(round: number): PendingRead[] {
    const done: PendingRead[] = [];
    while (this.head < this.queue.length && this.queue[this.head]!.round <= round) {
      done.push(this.queue[this.head]!);
      this.head++;
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    return done;
  }

  /** Empties the queue (leadership lost), returning what was waiting. */
  drain(): { requestId: string; from: NodeId | null }[] {
    const all = [...this.queue.slice(this.head), ...this.deferred];
    this.queue = [];
    this.head = 0;
    this.deferred = [];
    return all;
  }
}
