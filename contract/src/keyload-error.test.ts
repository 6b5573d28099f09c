import { describe, expect, it } from "vitest";
import { ERROR_CODES, ERROR_STATUS } from "./error-codes.js";
import {
  CommandIdConflictError,
  KeyLoadError,
  ResourceExhaustedError,
  UnknownWriteOutcomeError,
} from "./keyload-error.js";

describe("KeyLoadError", () => {
  it("renders the contract's error body, without absent optional fields", () => {
    const err = new CommandIdConflictError("command c1 was committed with another body", {
      reason: "DigestMismatch",
    });
    expect(err.status).toBe(409);
    expect(err.toBody()).toEqual({
      error: {
        code: "CommandIdConflict",
        reason: "DigestMismatch",
        message: "command c1 was committed with another body",
      },
    });
  });

  it("defaults the reason to the code and binds a command ID without touching the original", () => {
    const err = new UnknownWriteOutcomeError("replication deadline passed");
    const bound = err.withCommandId("cmd-1");
    expect(bound).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(bound.toBody().error).toMatchObject({
      code: "UnknownWriteOutcome",
      reason: "UnknownWriteOutcome",
      commandId: "cmd-1",
    });
    expect(err.commandId).toBeUndefined();
  });

  it("answers 413 for BodyTooLarge and 429 with a retry delay for every other exhaustion", () => {
    const big = new ResourceExhaustedError("BodyTooLarge", "body over 8 MiB", {
      governor: "http",
      pool: "data",
    });
    const busy = new ResourceExhaustedError("CommandBytes", "data lane full", {
      governor: "command",
      lane: "data",
    });
    expect([big.status, big.retryAfterSeconds]).toEqual([413, undefined]);
    expect([busy.status, busy.retryAfterSeconds]).toEqual([429, 1]);
    expect(busy.toBody().error.details).toEqual({ governor: "command", lane: "data" });
  });

  it("maps every registered code onto an HTTP error status", () => {
    for (const code of ERROR_CODES) {
      expect(new KeyLoadError(code, "x").status).toBe(ERROR_STATUS[code]);
      expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
    }
  });
});
