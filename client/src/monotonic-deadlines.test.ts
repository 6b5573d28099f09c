import { describe, expect, it } from "vitest";
import { UnavailableError, UnknownWriteOutcomeError } from "./index.js";
import { scriptedVoters } from "./test-fixtures/scripted-client.js";
import { errorBody, type ScriptedAnswer, type ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * Deadlines measure elapsed time, which the wall clock does not: stepped back (NTP, a VM resumed), it
 * would stretch a call's or a resolveOutcome's deadline by the step. They run on the monotonic clock,
 * which tests inject as `monotonicNow`.
 */

const UNAVAILABLE: ScriptedAnswer = { status: 503, body: errorBody("Unavailable", "NoLeader") };

const scripted = scriptedVoters({
  backoff: { initialMs: 20, maxMs: 20 },
  // Only the deadline ends these calls.
  maxAttempts: 1_000,
  retryBudget: { capacity: 1_000 },
});
const voter = (): Promise<ScriptedVoter> => scripted.voter(UNAVAILABLE);
const client = scripted.client;

/** A wall clock that steps back 5 s, 50 ms from now. */
function steppingBack(): () => number {
  let offsetMs = 0;
  setTimeout(() => {
    offsetMs = 5_000;
  }, 50);
  return () => Date.now() - offsetMs;
}

describe("deadlines on the monotonic clock", () => {
  it("end a call in its time while the wall clock steps back", async () => {
    const v = await voter();
    const c = client([v.url], { deadlineMs: 300, now: steppingBack() });
    const started = performance.now();
    const error = await c.get("k").catch((e: unknown) => e);
    // The last answer, or the attempt the deadline cut short.
    expect(error).toMatchObject({ name: expect.stringMatching(/^(UnavailableError|ConnectionError)$/) });
    expect(performance.now() - started).toBeLessThan(2_500);
  });

  it("end resolveOutcome in its time while the wall clock steps back", async () => {
    const v = await voter();
    const c = client([v.url], { maxAttempts: 1, now: steppingBack() });
    const started = performance.now();
    const error = await c
      .resolveOutcome("cmd-m", (o) => c.put("k", 1, o), { deadlineMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownWriteOutcomeError);
    expect(error).toMatchObject({ reason: "ResolveTimedOut" });
    expect(performance.now() - started).toBeLessThan(2_500);
  });

  it("run on the monotonic clock a test injects", async () => {
    const v = await voter();
    // Past every deadline below as soon as the voter has been asked once.
    const monotonicNow = (): number => (v.requests.length === 0 ? 0 : 10_000);
    const c = client([v.url], { deadlineMs: 5_000, monotonicNow });
    await expect(c.get("k")).rejects.toBeInstanceOf(UnavailableError);
    expect(v.requests).toHaveLength(1);

    v.requests.length = 0;
    const once = client([v.url], { maxAttempts: 1, monotonicNow });
    const error = await once
      .resolveOutcome("cmd-i", (o) => once.put("k", 1, o), { deadlineMs: 5_000 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "UnknownWriteOutcomeError", reason: "ResolveTimedOut" });
    expect(v.requests).toHaveLength(1);
  });
});
