import { describe, expect, it } from "vitest";
import {
  CommandIdConflictError,
  FailedPreconditionError,
  InternalError,
  InvalidArgumentError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "./index.js";
import { scriptedClients } from "./test-fixtures/scripted-client.js";
import { errorBody, type ScriptedAnswer } from "./test-fixtures/scripted-voter.js";

/**
 * resolveOutcome runs after an attempt that may have committed: unless the caller aborts it or it learns
 * the durable outcome, it must end in UnknownWriteOutcome, never in an error that reads as "not applied"
 * (a caller would resubmit under a new ID and apply the command twice).
 */

const setup = scriptedClients({ deadlineMs: 200, maxAttempts: 2 });

const UNKNOWN: ScriptedAnswer = {
  status: 504,
  body: errorBody("UnknownWriteOutcome", "ReplicationDeadline"),
};

const refused: ScriptedAnswer = {
  status: 429,
  headers: { "retry-after": "0" },
  body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
};

describe("resolveOutcome", () => {
  it.each([
    ["Unavailable", { status: 503, body: errorBody("Unavailable", "NoLeader") }, UnavailableError],
    ["ResourceExhausted", refused, ResourceExhaustedError],
  ] as const)("ends in UnknownWriteOutcome when its time runs out on %s", async (_name, answer, cause) => {
    const { v, c } = await setup([answer]);
    const error = await c
      .resolveOutcome("cmd-r", (o) => c.put("k", 1, o), { deadlineMs: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ reason: "ResolveTimedOut", commandId: "cmd-r" });
    expect((error as Error).cause).toBeInstanceOf(cause);
    expect(v.requests.length).toBeGreaterThan(1);
  });

  it("resubmits on Internal answers, which may come after the voter submitted the command", async () => {
    const { v, c } = await setup([{ status: 500, body: errorBody("Internal", "Bug") }]);
    const error = await c
      .resolveOutcome("cmd-i", (o) => c.put("k", 1, o), { deadlineMs: 100 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ commandId: "cmd-i", reason: "ResolveTimedOut" });
    const cause = (error as Error).cause;
    expect(cause).toMatchObject({ name: "UnknownWriteOutcomeError", reason: "Internal", status: 500 });
    expect((cause as Error).cause).toBeInstanceOf(InternalError);
    expect(v.requests.length).toBeGreaterThan(2);
  });

  // The voter checks the key and the role, the body against its cap and a control payload against its
  // own before it looks the command ID up, and a key revoked or a cap lowered between two rounds (caps may
  // differ per voter) refuses the resubmission of a command an earlier round committed.
  it.each([
    [
      "401 Unauthenticated",
      { status: 401, body: errorBody("Unauthenticated", "InvalidCredentials") },
      UnauthenticatedError,
    ],
    [
      "403 PermissionDenied",
      { status: 403, body: errorBody("PermissionDenied", "MissingRole") },
      PermissionDeniedError,
    ],
    [
      "413 BodyTooLarge",
      {
        status: 413,
        body: errorBody("ResourceExhausted", "BodyTooLarge", { governor: "http", pool: "data" }),
      },
      ResourceExhaustedError,
    ],
    [
      "429 ControlPayloadTooLarge",
      {
        status: 429,
        headers: { "retry-after": "0" },
        body: errorBody("ResourceExhausted", "ControlPayloadTooLarge", {
          governor: "command",
          lane: "control",
        }),
      },
      ResourceExhaustedError,
    ],
    [
      "400 RequestTimeout",
      { status: 400, body: errorBody("InvalidArgument", "RequestTimeout") },
      InvalidArgumentError,
    ],
  ] as const)(
    "ends in UnknownWriteOutcome on %s after a round that may have committed",
    async (_, answer, cause) => {
      const { v, c } = await setup([UNKNOWN, UNKNOWN, answer]);
      const error = await c.resolveOutcome("cmd-g", (o) => c.put("k", 1, o)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
      expect(error).toMatchObject({ commandId: "cmd-g", reason: "ResolveFailed" });
      expect((error as Error).cause).toBeInstanceOf(cause);
      expect((error as Error).cause).toMatchObject({ status: answer.status, commandId: "cmd-g" });
      expect(v.requests).toHaveLength(3);
    },
  );

  it("throws what the command ID committed as, after a round that may have committed", async () => {
    const { v, c } = await setup([
      UNKNOWN,
      UNKNOWN,
      { status: 409, body: errorBody("CommandIdConflict", "OutcomeExpired", { index: 7 }) },
    ]);
    const error = await c.resolveOutcome("cmd-e", (o) => c.put("k", 1, o)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandIdConflictError);
    expect(error).toMatchObject({ commandId: "cmd-e", reason: "OutcomeExpired", details: { index: 7 } });
    expect(v.requests).toHaveLength(3);
  });

  it("waits out a Retry-After longer than one timer can hold", async () => {
    // 2^31 ms and a little: one setTimeout of it would fire after 1 ms, and resubmit at once.
    const { v, c } = await setup([
      { ...refused, headers: { "retry-after": "2147484" } },
      { status: 200, body: { commandId: "cmd-l", key: "k", version: 1 } },
    ]);
    const error = await c
      .resolveOutcome("cmd-l", (o) => c.put("k", 1, o), {
        deadlineMs: 2 ** 40,
        signal: AbortSignal.timeout(150),
      })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ConnectionError", reason: "Aborted" });
    expect(v.requests).toHaveLength(1);
  });

  it("waits out the Retry-After a refusal ending a round asked, and a random share of it again", async () => {
    const later: ScriptedAnswer = { ...refused, headers: { "retry-after": "1" } };
    const done: ScriptedAnswer = { status: 200, body: { commandId: "cmd-w", key: "k", version: 1 } };
    const { v, c } = await setup([UNKNOWN, later], { deadlineMs: 5_000, random: () => 0.5 });
    // The refusal ends the call (its last attempt) in UnknownWriteOutcome, which keeps what it asked.
    const ended = await c.put("k", 1, { commandId: "cmd-w" }).catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(ended).toMatchObject({ reason: "RetriesExhausted", retryAfter: 1_000 });

    v.script(UNKNOWN, later, done);
    await expect(c.resolveOutcome("cmd-w", (o) => c.put("k", 1, o))).resolves.toMatchObject({ version: 1 });
    expect(v.requests).toHaveLength(5);
    expect(v.requests[4]!.at - v.requests[3]!.at).toBeGreaterThanOrEqual(1_490);
  });

  it("jitters the Retry-After of a refusal it was given as is", async () => {
    const later: ScriptedAnswer = { ...refused, headers: { "retry-after": "1" } };
    const done: ScriptedAnswer = { status: 200, body: { commandId: "cmd-j", key: "k", version: 1 } };
    const { v, c } = await setup([later, done], {
      deadlineMs: 5_000,
      random: () => 0.5,
      retryResourceExhausted: false,
    });
    await expect(c.resolveOutcome("cmd-j", (o) => c.put("k", 1, o))).resolves.toMatchObject({ version: 1 });
    expect(v.requests).toHaveLength(2);
    expect(v.requests[1]!.at - v.requests[0]!.at).toBeGreaterThanOrEqual(1_490);
  });

  it("returns the outcome, or throws the refusal it committed as, or the caller's abort", async () => {
    const { v, c } = await setup([
      { status: 503, body: errorBody("Unavailable", "NoLeader") },
      { status: 200, body: { commandId: "cmd-ok", key: "k", version: 3 } },
    ]);
    await expect(c.resolveOutcome("cmd-ok", (o) => c.put("k", 1, o))).resolves.toMatchObject({ version: 3 });
    v.script({ status: 412, body: errorBody("FailedPrecondition", "VersionMismatch") });
    await expect(c.resolveOutcome("cmd-f", (o) => c.put("k", 1, o))).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    v.script({ status: 503, body: errorBody("Unavailable", "NoLeader") });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await expect(
      c.resolveOutcome("cmd-a", (o) => c.put("k", 1, o), { signal: controller.signal, deadlineMs: 5_000 }),
    ).rejects.toMatchObject({ name: "ConnectionError", reason: "Aborted" });
  });
});
