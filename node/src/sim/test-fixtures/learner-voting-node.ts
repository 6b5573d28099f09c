import { Configuration } from "../../raft/configuration.js";
import { type NodeId, RaftNode, type RaftOptions } from "../../raft/index.js";
import type { SimOptions } from "../simulator.js";

/** A configuration that answers "voter" for its learners too, wherever the core asks. */
class LearnersVoteConfiguration extends Configuration {
  override isVoter(id: NodeId): boolean {
    return this.isMember(id);
  }
}

/** The core's private configuration, which this mutant replaces. */
const CONF_FIELD = "conf";

/**
 * A core that lets learners take part in elections: a learner campaigns and counts its own vote, and
 * voters answer its vote requests, while commitment still counts voters only. The core keeps its
 * configuration private, so the mutation swaps it by name, each time the core sets a new one, and
 * fails loudly should the name change.
 */
export class LearnerVotingNode extends RaftNode {
  constructor(options: RaftOptions) {
    super(options);
    const current: unknown = Reflect.get(this, CONF_FIELD);
    if (!(current instanceof Configuration))
      throw new Error(`the core has no ${CONF_FIELD} field for this mutant to replace`);
    let conf = new LearnersVoteConfiguration(current.state);
    Object.defineProperty(this, CONF_FIELD, {
      get: () => conf,
      set: (next: Configuration) => {
        conf = new LearnersVoteConfiguration(next.state);
      },
    });
  }
}

export const LEARNER_VOTING: SimOptions = {
  createNode: (options: RaftOptions) => new LearnerVotingNode(options),
};
