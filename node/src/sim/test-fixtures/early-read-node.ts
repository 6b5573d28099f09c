import { type NodeId, RaftNode, type RaftOptions } from "../../raft/index.js";
import type { SimOptions } from "../simulator.js";

/** The core's private parts this mutant's read handling uses. */
interface ReadInternals {
  handleReadRequest(requestId: string, from: NodeId | null): void;
  readonly log: { readonly committed: number };
  readonly conf: { readonly voters: ReadonlySet<NodeId> };
  readonly reads: { round: number; push(read: unknown): void };
  answerRead(requestId: string, from: NodeId | null, index: number): void;
  broadcastHeartbeat(): void;
}

const READ_HANDLER = "handleReadRequest";

/**
 * A leader that serves a read at the commit index it knows without first committing an entry of its
 * own term. A new leader may not know the latest commit index yet (its predecessor's commits reach
 * followers before it learns them), so its read can miss a write committed, and applied elsewhere,
 * before the read began. It still confirms its leadership with a heartbeat round. The handler is
 * private, so the mutation shadows it by name, and fails loudly should the name change.
 */
export class EarlyReadNode extends RaftNode {
  constructor(options: RaftOptions) {
    super(options);
    const core = this as unknown as ReadInternals;
    if (typeof Reflect.get(this, READ_HANDLER) !== "function")
      throw new Error(`the core has no ${READ_HANDLER} method for this mutant to replace`);
    Object.defineProperty(this, READ_HANDLER, {
      value: (requestId: string, from: NodeId | null): void => {
        const index = core.log.committed;
        if (core.conf.voters.size === 1) {
          core.answerRead(requestId, from, index);
          return;
        }
        const round = ++core.reads.round;
        core.reads.push({ requestId, from, index, round });
        core.broadcastHeartbeat();
      },
    });
  }
}

export const EARLY_READ: SimOptions = {
  createNode: (options: RaftOptions) => new EarlyReadNode(options),
};
