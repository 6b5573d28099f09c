import type { ConfState, NodeId } from "./types.js";

/**
 * One membership configuration as the core uses it: voters elect and count toward commitment;
 * learners only receive the log. A node that is neither (one that was removed, or one that has not yet
 * been added) follows whichever leader reaches it but never campaigns or votes.
 */
export class Configuration {
  readonly voters: ReadonlySet<NodeId>;
  readonly learners: ReadonlySet<NodeId>;
  /** Votes or acknowledgements that make a majority of the voters. */
  readonly quorum: number;

  constructor(readonly state: ConfState) {
    this.voters = new Set(state.voters);
    this.learners = new Set(state.learners ?? []);
    this.quorum = Math.floor(this.voters.size / 2) + 1;
  }

  isVoter(id: NodeId): boolean {
    return this.voters.has(id);
  }

  isMember(id: NodeId): boolean {
    return this.voters.has(id) || this.learners.has(id);
  }

  /** Every member but `self`: the nodes a leader replicates to. */
  peersOf(self: NodeId): NodeId[] {
    return [...this.voters, ...this.learners].filter((id) => id !== self);
  }

  /**
   * The highest value a quorum of voters has reached, given what each has (0 for one `reached` does
   * not know): the commit index from match indexes, the confirmed round from read rounds.
   */
  quorumValue(reached: (id: NodeId) => number): number {
    const values = [...this.voters].map(reached).sort((a, b) => b - a);
    return values[this.quorum - 1] ?? 0;
  }
}
