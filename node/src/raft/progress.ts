import { Inflights } from "./inflights.js";
import type { Snapshot } from "./types.js";

/**
 * How the leader replicates to one follower:
 * - `probe`: one append at a time until the follower's match is found;
 * - `replicate`: optimistic pipelining, bounded by the inflight window;
 * - `snapshot`: the follower is behind the log and is sent a snapshot in chunks.
 */
export type ProgressState = "probe" | "replicate" | "snapshot";

/** The chunked InstallSnapshot under way to one follower. */
export interface SnapshotTransfer {
  readonly snapshot: Snapshot;
  /** The next byte offset to send. */
  sentOffset: number;
  /** Every byte before this offset is acknowledged. */
  ackedOffset: number;
  /** A chunk went out since the last rewind (an empty snapshot, or a probe, is one empty chunk). */
  started: boolean;
  /** The offset of the rewind under way: further rejections naming it are ignored. */
  rewoundTo: number | null;
  /** `ackedOffset` when the current heartbeat interval began. */
  ackedAtInterval: number;
  /** A whole heartbeat interval went by with no chunk acknowledged; the next heartbeat answer rewinds. */
  stalled: boolean;
}

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = "probe";
  /** In probe state: an append was sent and no answer has come yet. */
  probeSent = false;
  /** Heard from this peer since the last check-quorum round. */
  recentActive = false;
  /** Heard from this peer in the round before: with `recentActive`, within the last two. */
  activeRoundBefore = false;
  /** The highest ReadIndex round this peer has confirmed. */
  readRound = 0;
  transfer: SnapshotTransfer | null = null;
  /**
   * Counts the state changes: appends carry it and their answers echo it, so the leader knows an
   * answer to one sent in the current state from one overtaken on the wire since an earlier state.
   */
  epoch = 0;
  /** `match` when the current epoch began: the follower held at least this much before any of its appends. */
  epochMatch = 0;
  /**
   * The first epoch whose answers count: the one begun when the follower was found to have lost
   * entries it acknowledged (restartFrom). An answer to a message sent before names a log it no
   * longer holds.
   */
  trustedFromEpoch = 0;
  readonly inflights: Inflights;

  constructor(next: number, maxInflightMsgs: number, maxInflightBytes: number) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
  }

  becomeProbe(): void {
    // After a snapshot, resume right after it rather than from a match that may be far behind.
    const snapIndex = this.transfer ? this.transfer.snapshot.meta.index : 0;
    this.resetState("probe");
    this.next = Math.max(this.match + 1, snapIndex + 1);
  }

  becomeReplicate(): void {
    this.resetState("replicate");
    this.next = this.match + 1;
  }

  /**
   * The follower no longer holds what it acknowledged: nothing it holds is known to match any more.
   * Probe from `hint`, the last index where its log may agree with the leader's.
   */
  restartFrom(hint: number): void {
    this.match = 0;
    this.resetState("probe");
    this.next = hint + 1;
    this.trustedFromEpoch = this.epoch;
  }

  becomeSnapshot(snapshot: Snapshot): void {
    this.resetState("snapshot");
    this.transfer = {
      snapshot,
      sentOffset: 0,
      ackedOffset: 0,
      started: false,
      rewoundTo: null,
      ackedAtInterval: -1,
      stalled: false,
    };
  }

  private resetState(state: ProgressState): void {
    this.epoch++;
    this.epochMatch = this.match;
    this.state = state;
    this.probeSent = false;
    this.transfer = null;
    this.inflights.reset();
  }

  /** An acknowledgement up to `index`; false when it is stale. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * A rejection of the append that followed `rejected`; `matchHint` is the leader's estimate of the
   * last index both logs share. False when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case "probe":
        return this.probeSent;
      case "replicate":
        return this.inflights.full();
      case "snapshot":
        return true;
    }
  }
}
