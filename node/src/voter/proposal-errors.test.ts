import {
  FailedPreconditionError,
  InvalidArgumentError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { ProposalRefusedError } from "../raft/errors.js";
import { confChangeRefusal, overwritten, unavailable } from "./proposal-errors.js";

describe("proposal errors", () => {
  it("unavailable keeps the refusal's reason and names the hinted leader's voter", () => {
    const err = unavailable(new ProposalRefusedError("NotLeader", "b~0123abcd", "not the leader"));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.reason).toBe("NotLeader");
    expect(err.message).toBe("nothing was submitted: not the leader");
    expect(err.details).toEqual({ leaderId: "b" });
  });

  it("unavailable without a leader hint carries no leader", () => {
    const err = unavailable(new ProposalRefusedError("NoLeader", null, "no leader"));
    expect(err.reason).toBe("NoLeader");
    expect(err.details).toEqual({});
  });

  it("confChangeRefusal: a pending change is a failed precondition", () => {
    const err = confChangeRefusal(new ProposalRefusedError("ConfChangePending", null, "pending"));
    expect(err).toBeInstanceOf(FailedPreconditionError);
    expect(err.reason).toBe("ConfChangePending");
  });

  it("confChangeRefusal: a change that does not apply is an invalid argument", () => {
    const err = confChangeRefusal(new ProposalRefusedError("InvalidConfChange", null, "bad"));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err.reason).toBe("InvalidConfChange");
  });

  it("confChangeRefusal: any other refusal is Unavailable", () => {
    const err = confChangeRefusal(new ProposalRefusedError("NotLeader", "c", "not the leader"));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err.reason).toBe("NotLeader");
    expect(err.details).toEqual({ leaderId: "c" });
  });

  it("overwritten is an unknown outcome, its reason LeadershipChanged", () => {
    const err = overwritten();
    expect(err).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(err.reason).toBe("LeadershipChanged");
  });
});
