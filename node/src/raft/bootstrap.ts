import { encodeConfChange } from "./conf-change.js";
import type { Entry, HardState, NodeId } from "./types.js";

/**
 * What each voter of a new cluster writes to its empty storage before its core starts, as etcd's
 * bootstrap does: the configuration as the log's first entry, committed in term 1. Every voter
 * writes the same entry, so their logs agree from the start; a node started without it holds no
 * configuration and waits to be added.
 */
export function bootstrapState(voters: readonly NodeId[]): { entries: Entry[]; hardState: HardState } {
  const data = encodeConfChange({ type: "bootstrap", voters: [...voters].sort() });
  return {
    entries: [{ term: 1, index: 1, type: "conf", data }],
    hardState: { term: 1, vote: null, commit: 1 },
  };
}
