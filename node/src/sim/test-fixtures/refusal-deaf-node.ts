import { type Message, RaftNode } from "../../raft/index.js";

/**
 * A leader that never hears a follower refuse an append: it goes on sending what follows the entries
 * it believes the follower has, so a follower that missed one (a drop, a crash, a log cut short) is
 * never brought back, and once a quorum depends on it nothing more commits. Safe, but stuck: the
 * simulator must catch it as a liveness failure.
 */
export class RefusalDeafNode extends RaftNode {
  override step(m: Message): void {
    if (m.type === "append-response" && m.reject) return;
    super.step(m);
  }
}
