import { describe, expect, it } from "vitest";
import { ERROR_CODES, ERROR_STATUS } from "./error-codes.js";
import {
  CommandIdConflictError,
  errorForCode,
  errorFromBody,
  InternalError,
  InvalidArgumentError,
  KeyLoadError,
  NotFoundError,
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

  it("keeps the cause when it binds a command ID", () => {
    const cause = new TypeError("not JSON");
    const bound = new InvalidArgumentError("bad body", { cause }).withCommandId("cmd-1");
    expect(bound.cause).toBe(cause);
    expect(Object.keys(bound)).not.toContain("cause");
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

  it("carries what a client read from an answer: the answered status, the endpoint, Retry-After", () => {
    const answered = new InternalError("m", { httpStatus: 502, endpoint: "http://v1:1", retryAfter: 5 });
    expect([answered.status, answered.endpoint, answered.retryAfter]).toEqual([502, "http://v1:1", 5]);
    expect(answered.withCommandId("c").status).toBe(502);
    const local = new InternalError("m");
    expect([local.status, local.endpoint, local.retryAfter]).toEqual([500, undefined, undefined]);
    const refused = new ResourceExhaustedError(
      "TenantRequests",
      "m",
      { governor: "http", pool: "data" },
      {
        httpStatus: 429,
        retryAfter: 2_000,
        retryAfterSeconds: 2,
      },
    );
    expect(refused).toMatchObject({ status: 429, governor: "http", pool: "data", lane: undefined });
    expect([refused.retryAfter, refused.retryAfterSeconds]).toEqual([2_000, 2]);
  });

  it("names a client's own throttle as the refusing governor, without a Retry-After", () => {
    const throttled = new ResourceExhaustedError("ClientThrottled", "m", { governor: "client" });
    expect(throttled).toMatchObject({ status: 429, governor: "client", retryAfterSeconds: undefined });
  });

  it("gives every code its own class, keeping the contract's status", () => {
    const names = new Set<string>();
    for (const code of ERROR_CODES) {
      const error = errorForCode(code, "m");
      expect(error).toBeInstanceOf(KeyLoadError);
      expect(error.code).toBe(code);
      expect(error.name).toBe(`${code}Error`);
      expect(error.status).toBe(ERROR_STATUS[code]);
      names.add(error.name);
    }
    expect(names.size).toBe(ERROR_CODES.length);
  });

  it("rebuilds a relayed body as its code's own class", () => {
    const relayed = errorFromBody(
      { code: "NotFound", reason: "NoSuchKey", message: "m" },
      { commandId: "c-1" },
    );
    expect(relayed).toBeInstanceOf(NotFoundError);
    expect(relayed).toMatchObject({ reason: "NoSuchKey", commandId: "c-1", status: 404 });
    const refused = errorFromBody({ code: "ResourceExhausted", reason: "CommandCount", message: "m" });
    expect(refused).toBeInstanceOf(ResourceExhaustedError);
    expect(refused).toMatchObject({ governor: "command", status: 429, retryAfterSeconds: 1 });
    const later = errorFromBody(
      { code: "ResourceExhausted", reason: "DiskFloor", message: "m" },
      { retryAfterSeconds: 5 },
    );
    expect(later).toMatchObject({ reason: "DiskFloor", retryAfterSeconds: 5 });
  });

  it("maps every registered code onto an HTTP error status", () => {
    for (const code of ERROR_CODES) {
      expect(new KeyLoadError(code, "x").status).toBe(ERROR_STATUS[code]);
      expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
    }
  });
});
