import {
  FailedPreconditionError,
  InvalidArgumentError,
  type KeyLoadError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import { memberName } from "../peer/member-name.js";
import type { ProposalRefusedError } from "../raft/errors.js";

/**
 * A proposal, read or leadership transfer the core refused before accepting it: nothing was
 * submitted, so the caller may retry, at the leader the hint names when there is one.
 */
export function unavailable(err: ProposalRefusedError): UnavailableError {
  return new UnavailableError(`nothing was submitted: ${err.message}`, {
    reason: err.reason,
    details: err.leaderHint === null ? {} : { leaderId: memberName(err.leaderHint) },
  });
}

/**
 * A refused membership change: retrying the same change helps only once the earlier one is applied
 * (ConfChangePending), never when it does not apply to the configuration (InvalidConfChange).
 */
export function confChangeRefusal(err: ProposalRefusedError): KeyLoadError {
  if (err.reason === "ConfChangePending")
    return new FailedPreconditionError(err.message, { reason: "ConfChangePending" });
  if (err.reason === "InvalidConfChange")
    return new InvalidArgumentError(err.message, { reason: "InvalidConfChange" });
  return unavailable(err);
}

/** An appended entry another leader replaced: whether its command made it is known only by its ID. */
export function overwritten(): UnknownWriteOutcomeError {
  return new UnknownWriteOutcomeError(
    "leadership changed before this entry was confirmed; retry with the same command ID to learn its outcome",
    { reason: "LeadershipChanged" },
  );
}
