/** Typed errors of the Raft core. Every refusal a caller can act on carries a stable `code`. */

export type ProposalRefusalReason =
  | "NoLeader"
  | "NotLeader"
  | "TransferInProgress"
  | "UncommittedBytesExceeded"
  | "ConfChangePending"
  | "InvalidConfChange";

export class RaftError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A proposal or read the core refused before accepting it: nothing was appended. */
export class ProposalRefusedError extends RaftError {
  readonly reason: ProposalRefusalReason;
  readonly leaderHint: string | null;
  constructor(reason: ProposalRefusalReason, leaderHint: string | null, message: string) {
    super("RaftProposalRefused", message);
    this.reason = reason;
    this.leaderHint = leaderHint;
  }
}

/** The requested entries lie behind the storage's compaction point: send a snapshot instead. */
export class LogCompactedError extends RaftError {
  constructor(index: number, firstIndex: number) {
    super("RaftLogCompacted", `index ${index} is compacted (first available index is ${firstIndex})`);
  }
}

/** The requested index lies beyond what storage holds. */
export class LogUnavailableError extends RaftError {
  constructor(index: number, lastIndex: number) {
    super("RaftLogUnavailable", `index ${index} is beyond the last stored index ${lastIndex}`);
  }
}

/** A snapshot older than the storage's current one was offered for installation. */
export class SnapshotOutOfDateError extends RaftError {
  constructor(index: number, current: number) {
    super("RaftSnapshotOutOfDate", `snapshot at ${index} is older than the stored snapshot at ${current}`);
  }
}

/** A broken internal invariant: the core stops rather than risk diverging from its peers. */
export class RaftInvariantError extends RaftError {
  constructor(message: string) {
    super("RaftInvariantViolated", message);
  }
}
