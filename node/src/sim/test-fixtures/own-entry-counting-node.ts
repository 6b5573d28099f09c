import { RaftNode, type RaftOptions } from "../../raft/index.js";
import type { SimOptions } from "../simulator.js";

/**
 * A leader that counts its own entries toward a quorum as soon as it appends them, before they are
 * durable: the core's own rule (only what advance() confirmed counts) broken.
 */
export class OwnEntryCountingNode extends RaftNode {
  protected override selfMatchIndex(): number {
    return this.status().lastIndex;
  }
}

export const OWN_ENTRY_COUNTING: SimOptions = {
  createNode: (options: RaftOptions) => new OwnEntryCountingNode(options),
};
