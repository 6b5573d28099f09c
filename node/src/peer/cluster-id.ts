/**
 * Which cluster this node belongs to, as the handshake needs it. A cluster's ID is made once, when it
 * is bootstrapped; a node that started empty without being told to bootstrap does not know it yet and
 * learns it from the first peer that proves the cluster secret. After that, a peer announcing another
 * cluster's ID is refused: two clusters sharing a secret and addresses never mix their logs.
 */
export interface ClusterId {
  /** The ID, or null while this node has not learnt it. */
  current(): string | null;
  /** Records the ID a peer announced while ours was unknown; durable before it returns. */
  adopt(id: string): void;
}

/** A cluster ID held in memory: fixed, or unknown until adopted. */
export class InMemoryClusterId implements ClusterId {
  constructor(private id: string | null) {}

  current(): string | null {
    return this.id;
  }

  adopt(id: string): void {
    this.id = id;
  }
}
