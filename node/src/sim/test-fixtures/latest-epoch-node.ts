import { type Message, RaftNode, type Ready } from "../../raft/index.js";

/**
 * Takes every refusal of an append for an answer to the latest append it sent that follower, as a
 * leader without replication epochs would: a refusal overtaken on the wire by later acknowledgements
 * then reads as a follower that lost its data, and the leader lowers its match. The simulator must
 * catch it.
 */
export class LatestEpochNode extends RaftNode {
  private readonly sent = new Map<string, number>();

  override ready(): Ready {
    const rd = super.ready();
    for (const m of rd.messages) if (m.type === "append") this.sent.set(m.to, m.epoch);
    return rd;
  }

  override step(m: Message): void {
    if (m.type === "append-response" && m.reject) {
      super.step({ ...m, epoch: this.sent.get(m.from) ?? m.epoch });
      return;
    }
    super.step(m);
  }
}
