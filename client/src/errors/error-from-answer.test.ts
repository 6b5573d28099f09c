import {
  CommandIdConflictError,
  InternalError,
  ResourceExhaustedError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { errorFromAnswer } from "./error-from-answer.js";

const answer = { endpoint: "http://v1:1", retryAfter: undefined, commandId: "c-1", write: true };

describe("errorFromAnswer", () => {
  it("reads the contract's body, status, Retry-After and the refusing governor", () => {
    const body = {
      error: {
        code: "ResourceExhausted",
        reason: "CommandBytes",
        message: "data lane full",
        commandId: "c-1",
        details: { governor: "command", lane: "data", limit: "MaxRetainedBytes" },
      },
    };
    const error = errorFromAnswer({ ...answer, status: 429, retryAfter: 1_000, text: JSON.stringify(body) });
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(error).toMatchObject({
      reason: "CommandBytes",
      message: "data lane full",
      commandId: "c-1",
      retryAfter: 1_000,
      governor: "command",
      lane: "data",
      pool: undefined,
      endpoint: "http://v1:1",
      status: 429,
    });
    expect(error.toBody()).toEqual(body);
  });

  it("keeps the status it received (413 for BodyTooLarge) and binds the request's command ID", () => {
    const body = {
      error: {
        code: "ResourceExhausted",
        reason: "BodyTooLarge",
        message: "m",
        details: { governor: "http", pool: "data" },
      },
    };
    const error = errorFromAnswer({ ...answer, status: 413, text: JSON.stringify(body) });
    expect(error).toMatchObject({ status: 413, commandId: "c-1", pool: "data", retryAfter: undefined });
    const conflict = errorFromAnswer({
      ...answer,
      status: 409,
      text: '{"error":{"code":"CommandIdConflict","reason":"DigestMismatch","message":"m"}}',
    });
    expect(conflict).toBeInstanceOf(CommandIdConflictError);
    expect(conflict.withCommandId("c-2")).toBeInstanceOf(CommandIdConflictError);
  });

  it("names the command ID the request carried, whatever ID the body names", () => {
    const text =
      '{"error":{"code":"InvalidArgument","reason":"InvalidBody","message":"m","commandId":"other"}}';
    expect(errorFromAnswer({ ...answer, status: 400, text }).commandId).toBe("c-1");
    // A request that carried none (a read) takes the body's.
    expect(
      errorFromAnswer({ ...answer, commandId: undefined, write: false, status: 400, text }).commandId,
    ).toBe("other");
  });

  it("makes an answer outside the contract Internal, or UnknownWriteOutcome for a write's 5xx", () => {
    const page = { ...answer, status: 502, text: "<html>bad gateway</html>" };
    expect(errorFromAnswer(page)).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(errorFromAnswer({ ...page, write: false })).toBeInstanceOf(InternalError);
    expect(
      errorFromAnswer({ ...page, status: 400, text: '{"error":{"code":"Nope","message":"m"}}' }),
    ).toBeInstanceOf(InternalError);
    expect(errorFromAnswer({ ...page, write: false }).reason).toBe("UnexpectedAnswer");
  });

  it("makes a write's Internal answer UnknownWriteOutcome, keeping the InternalError as its cause", () => {
    // The voter answers any unexpected throw Internal, one after it submitted the command included.
    const text = '{"error":{"code":"Internal","reason":"Unexpected","message":"the voter failed"}}';
    const error = errorFromAnswer({ ...answer, status: 500, text });
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({
      reason: "Internal",
      commandId: "c-1",
      endpoint: "http://v1:1",
      status: 500,
    });
    expect(error.cause).toBeInstanceOf(InternalError);
    expect(error.cause).toMatchObject({
      reason: "Unexpected",
      message: "the voter failed",
      commandId: "c-1",
    });
    // A read's is the voter's InternalError as it came.
    const read = errorFromAnswer({ ...answer, commandId: undefined, write: false, status: 500, text });
    expect(read).toBeInstanceOf(InternalError);
    expect(read).toMatchObject({ reason: "Unexpected", status: 500 });
  });
});
