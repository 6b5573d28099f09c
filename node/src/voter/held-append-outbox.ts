import { memberName } from "../peer/member-name.js";
import type { Message, NodeId } from "../raft/types.js";

/**
 * A leader's outbox that holds its commit notices, entry-less appends which only move a follower's
 * commit index (AppendMessage.commitNotice), until the next message to that follower: at one writer every commit would otherwise wake both
 * followers a second time (and the leader's socket write that wakes one can hand it the leader's CPU)
 * to tell them what the next request's append tells them anyway. The next append replaces a held
 * one; anything else (a heartbeat at the latest, a read's confirmation) goes after it. Dropping a
 * held append is safe, as losing any message is (docs/decisions/0010-commit-index-rides-along.md).
 */
export class HeldAppendOutbox {
  /** Per follower, the latest append held back. */
  private readonly held = new Map<NodeId, Message>();

  constructor(private readonly deliver: (m: Message) => void) {}

  /**
   * Delivers `m`, or holds it when it is a commit notice and this voter is `leading`. An entry-less
   * probe (after a lost append, or for a follower that asks to have its log checked) goes at once: held,
   * it would cost the follower a heartbeat interval.
   */
  send(m: Message, leading: boolean): void {
    if (m.type === "append" && m.commitNotice === true && m.entries.length === 0 && leading) {
      this.held.set(m.to, m);
      return;
    }
    // A newer append supersedes the held one; anything else goes after it.
    if (m.type === "append") this.held.delete(m.to);
    else this.deliverHeld(m.to);
    this.deliver(m);
  }

  /**
   * Delivers now what is held for `to`: a member ID, or a voter's name, which stands for each member
   * that voter runs. Whoever hears from a peer knows it by name (the peer network's), while a voter
   * replaced after losing its data is the member `name~token` (member-name.ts).
   */
  release(to: string): void {
    for (const id of this.held.keys()) {
      if (id === to || memberName(id) === to) this.deliverHeld(id);
    }
  }

  private deliverHeld(to: NodeId): void {
    const held = this.held.get(to);
    if (held === undefined) return;
    this.held.delete(to);
    this.deliver(held);
  }

  /** Drops every held append. */
  clear(): void {
    this.held.clear();
  }
}
