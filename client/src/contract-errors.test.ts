import * as contract from "@keyload/contract";
import { afterEach, describe, expect, it } from "vitest";
import * as client from "./index.js";
import { errorBody, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

describe("the client's errors are the contract's", () => {
  it("throws, for a 404 answer, the contract's NotFoundError: the class the voter throws", async () => {
    const voter = await ScriptedVoter.start({ status: 404, body: errorBody("NotFound", "NoSuchKey") });
    opened.push(voter);
    const keyload = new client.KeyLoadClient({
      endpoints: [voter.url],
      apiKey: "k",
      adaptiveThrottle: false,
    });
    opened.push(keyload);
    const error = await keyload.get("missing").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(contract.NotFoundError);
    expect(error).toBeInstanceOf(contract.KeyLoadError);
    expect(error).toBeInstanceOf(client.NotFoundError);
    expect(error).toMatchObject({ code: "NotFound", reason: "NoSuchKey", status: 404, endpoint: voter.url });
  });

  it("exports, under every code's name, the very constructor the voter uses", () => {
    const exported: [unknown, unknown][] = [
      [client.ResourceExhaustedError, contract.ResourceExhaustedError],
      [client.UnknownWriteOutcomeError, contract.UnknownWriteOutcomeError],
      [client.UnavailableError, contract.UnavailableError],
      [client.InvalidArgumentError, contract.InvalidArgumentError],
      [client.UnauthenticatedError, contract.UnauthenticatedError],
      [client.PermissionDeniedError, contract.PermissionDeniedError],
      [client.NotFoundError, contract.NotFoundError],
      [client.CommandIdConflictError, contract.CommandIdConflictError],
      [client.LeaseLostError, contract.LeaseLostError],
      [client.FailedPreconditionError, contract.FailedPreconditionError],
      [client.InternalError, contract.InternalError],
      [client.KeyLoadError, contract.KeyLoadError],
      [client.KeyLoadClientError, contract.KeyLoadError],
    ];
    for (const [fromClient, fromContract] of exported) expect(fromClient).toBe(fromContract);
    // Every code's class, as the voter builds it from a code, is among them.
    const classes = new Set(exported.map(([fromClient]) => fromClient));
    for (const code of contract.ERROR_CODES) {
      expect(classes.has(contract.errorForCode(code, "m").constructor), code).toBe(true);
    }
  });

  it("exports the codes and reasons a caller switches on, without importing the contract", () => {
    expect(client.ERROR_CODES).toBe(contract.ERROR_CODES);
    expect(client.ERROR_STATUS).toBe(contract.ERROR_STATUS);
    expect(client.isErrorCode("ResourceExhausted")).toBe(true);
    expect(client.isErrorCode("Nope")).toBe(false);
    // Compiles only while the types are exported.
    const reason: client.ResourceExhaustedReason = "CommandBytes";
    const details: client.ResourceExhaustedDetails = { governor: "command", lane: "data" };
    const lane: client.Lane = details.lane ?? "data";
    const code: client.ErrorCode = "Unavailable";
    const governor: client.Governor = "http";
    expect([reason, lane, code, governor]).toEqual(["CommandBytes", "data", "Unavailable", "http"]);
  });
});
