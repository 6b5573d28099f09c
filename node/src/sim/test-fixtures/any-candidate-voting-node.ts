import { RaftNode, type RaftOptions } from "../../raft/index.js";

/** The core's private check that the node asking for a vote is a voter, which this mutant replaces. */
const CHECK_METHOD = "mayAskForVotes";

/**
 * A core that answers the vote requests of any node, voter or not: a removed voter that has not yet
 * applied its removal, or one a promotion has not reached, gets votes it must not. Everything else is
 * the real core's. The check is private, so the mutation replaces it by name, and fails loudly should
 * the name change.
 */
export class AnyCandidateVotingNode extends RaftNode {
  constructor(options: RaftOptions) {
    super(options);
    if (typeof Reflect.get(this, CHECK_METHOD) !== "function")
      throw new Error(`the core has no ${CHECK_METHOD} method for this mutant to replace`);
    Reflect.set(this, CHECK_METHOD, () => true);
  }
}
