import { describe, expect, it } from "vitest";
import {
  FailedPreconditionError,
  InternalError,
  ResourceExhaustedError,
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

  it("ends in UnknownWriteOutcome on an Internal answer, which says nothing about the command", async () => {
    const { c } = await setup([{ status: 500, body: errorBody("Internal", "Bug") }]);
    const error = await c.resolveOutcome("cmd-i", (o) => c.put("k", 1, o)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ commandId: "cmd-i", reason: "ResolveFailed" });
    expect((error as Error).cause).toBeInstanceOf(InternalError);
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
