import { RaftNode, type RaftOptions } from "../../raft/index.js";
import { FIGURE_EIGHT_PROFILE } from "../fault-profile.js";
import type { SimOptions } from "../simulator.js";

/**
 * Commits entries of earlier terms by counting replicas, which Figure 8 of the Raft paper shows to
 * be unsafe: such an entry can reach a majority, be applied, and then be overwritten by a leader
 * elected without it. The simulator must catch it.
 */
export class CountingCommitNode extends RaftNode {
  protected override commitAllowed(_index: number): boolean {
    return true;
  }
}

/** The broken core under the profile built to reach Figure 8. */
export const BROKEN_COMMIT_RULE: SimOptions = {
  profile: FIGURE_EIGHT_PROFILE,
  createNode: (options: RaftOptions) => new CountingCommitNode(options),
};
