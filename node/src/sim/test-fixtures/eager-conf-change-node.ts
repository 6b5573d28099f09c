import { type ConfChange, RaftNode, type RaftOptions } from "../../raft/index.js";
import type { SimOptions } from "../simulator.js";

/** The core's private record of the last membership change proposed, which this mutant clears. */
const PENDING_FIELD = "pendingConfIndex";

/**
 * A leader that forgets its own membership change is pending: it accepts another change before the
 * last one it proposed is applied, so two can be uncommitted at once. Everything else is the real
 * core's, the rule that a new leader first applies an entry of its own term included. The core keeps
 * the record private, so the mutation reaches it by name, and fails loudly should the name change.
 */
export class EagerConfChangeNode extends RaftNode {
  private lastProposedChange = 0;

  constructor(options: RaftOptions) {
    super(options);
    if (typeof Reflect.get(this, PENDING_FIELD) !== "number")
      throw new Error(`the core has no ${PENDING_FIELD} field for this mutant to clear`);
  }

  override proposeConfChange(change: ConfChange): { index: number; term: number } {
    if (Reflect.get(this, PENDING_FIELD) === this.lastProposedChange) Reflect.set(this, PENDING_FIELD, 0);
    const at = super.proposeConfChange(change);
    this.lastProposedChange = at.index;
    return at;
  }
}

export const EAGER_CONF_CHANGE: SimOptions = {
  createNode: (options: RaftOptions) => new EagerConfChangeNode(options),
};
