import type { HardState, Message, NodeId } from "../raft/index.js";
import { InvariantViolation } from "./invariants.js";

/**
 * A granted vote and an acknowledged append vouch for what the sender's disk holds durably as they
 * leave: its vote in that term, and entries up to the index acknowledged. Sent before the write that
 * makes them durable, or after a later one replaced them, they count toward a quorum something a power
 * loss or a newer leader has already taken back. `hardState` and `lastIndex` are the disk's, synced.
 */
export function checkVouched(id: NodeId, m: Message, hardState: HardState, lastIndex: number): void {
  if (
    m.type === "vote-response" &&
    !m.reject &&
    (hardState.term < m.term || (hardState.term === m.term && hardState.vote !== m.to))
  ) {
    throw new InvariantViolation(
      "monotonic-progress",
      `${id} grants ${m.to} its vote in term ${m.term} with term ${hardState.term}, vote ${hardState.vote ?? "-"} on disk`,
    );
  }
  if (m.type === "append-response" && !m.reject && (lastIndex < m.index || hardState.term < m.term)) {
    throw new InvariantViolation(
      "monotonic-progress",
      `${id} acknowledges index ${m.index} in term ${m.term} with ${lastIndex} entries and term ${hardState.term} on disk`,
    );
  }
}
