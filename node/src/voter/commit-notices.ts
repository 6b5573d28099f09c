import type { Message, NodeId } from "../raft/types.js";

/**
 * A leader's outgoing Raft traffic, with its empty appends held back a little. The core sends one to
 * each follower whenever the commit index moves; at low concurrency that is two socket writes on the
 * leader, two Readies and two answers per client write, about a third of the cluster's work, for
 * something the next append carries anyway. So an empty append waits up to `holdMs`: an append with
 * entries to the same follower replaces it (it carries the current commit index), anything else to
 * that follower sends it first, and otherwise it leaves when the time is up. Holding or dropping a
 * message is what the network may do to any of them: Raft's safety does not depend on delivery.
 */
export class CommitNotices {
  private readonly held = new Map<NodeId, Message>();
  private timer: NodeJS.Timeout | null = null;
  private readonly release = (): void => {
    this.timer = null;
    this.sendHeld();
  };

  constructor(
    private readonly transport: { send(message: Message): void },
    private readonly holdMs: number,
  ) {}

  send(message: Message): void {
    if (message.type === "append" && message.entries.length === 0) {
      this.held.set(message.to, message);
      this.timer ??= setTimeout(this.release, this.holdMs);
      return;
    }
    const held = this.held.get(message.to);
    if (held !== undefined) {
      this.held.delete(message.to);
      if (message.type !== "append") this.transport.send(held);
    }
    this.transport.send(message);
  }

  /** Sends whatever is held now. */
  sendHeld(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (const message of this.held.values()) this.transport.send(message);
    this.held.clear();
  }

  /** Drops whatever is held (the driver is stopping). */
  clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.held.clear();
  }
}
