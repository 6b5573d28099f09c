import { describe, expect, it } from "vitest";
import { ResourceExhaustedError } from "./index.js";
import { scriptedVoters } from "./test-fixtures/scripted-client.js";
import { errorBody, type ScriptedAnswer } from "./test-fixtures/scripted-voter.js";

/**
 * A voter's HTTP pool, and its command governor where it is a follower (details.leader false; a voter
 * that does not say counts for its disk floors only), are its own: another voter may accept what it
 * refuses. Such a refusal moves the call on, as a dead voter does, and leaves the lane's throttle alone,
 * which counts the cluster's refusals (the leader's command governor's) and would hold back calls other
 * voters take.
 */

const OK_PUT: ScriptedAnswer = { status: 200, body: { commandId: "c", key: "k", version: 1 } };
const DOC: ScriptedAnswer = { status: 200, body: { key: "k", value: 1, version: 1 } };

const diskFloor = (retryAfter = "0"): ScriptedAnswer => ({
  status: 429,
  headers: { "retry-after": retryAfter },
  body: errorBody("ResourceExhausted", "DiskFloor", {
    governor: "command",
    lane: "data",
    limit: "SoftFloorBytes",
  }),
});
/** Below the hard floor a voter refuses control commands too, under a reason of their own. */
const diskHardFloor: ScriptedAnswer = {
  status: 429,
  headers: { "retry-after": "0" },
  body: errorBody("ResourceExhausted", "DiskHardFloor", {
    governor: "command",
    lane: "control",
    limit: "HardFloorBytes",
  }),
};
const httpPool = (retryAfter = "0"): ScriptedAnswer => ({
  status: 429,
  headers: { "retry-after": retryAfter },
  body: errorBody("ResourceExhausted", "HttpRequests", { governor: "http", pool: "data" }),
});
const commandCount: ScriptedAnswer = {
  status: 429,
  headers: { "retry-after": "0" },
  body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane: "data" }),
};
/** A command refusal that says whose governor refused: the leader's, or the answering follower's. */
const commandBytes = (leader: boolean): ScriptedAnswer => ({
  status: 429,
  headers: { "retry-after": "0" },
  body: errorBody("ResourceExhausted", "CommandBytes", { governor: "command", lane: "data", leader }),
});
const leaderDiskFloor: ScriptedAnswer = {
  status: 429,
  headers: { "retry-after": "0" },
  body: errorBody("ResourceExhausted", "DiskFloor", { governor: "command", lane: "data", leader: true }),
};

const { voter, client } = scriptedVoters();

describe("a refusal of one voter's own", () => {
  it.each([
    ["DiskFloor", diskFloor()],
    ["DiskHardFloor", diskHardFloor],
    ["an HTTP pool's", httpPool()],
    ["a follower's own command governor's", commandBytes(false)],
  ])("moves the retry and the calls after it to another voter: %s", async (_, refusal) => {
    const a = await voter(refusal);
    const b = await voter(OK_PUT);
    const c = client([a.url, b.url], { maxAttempts: 3 });
    for (let i = 0; i < 5; i++) await c.put("k", i);
    expect([a.requests.length, b.requests.length]).toEqual([1, 5]);
    expect(c.preferredEndpoint).toBe(b.url);
  });

  it("moves the next call on even when the refusal ends its own", async () => {
    const a = await voter(diskFloor());
    const b = await voter(OK_PUT);
    const c = client([a.url, b.url], { retryResourceExhausted: false });
    await expect(c.put("k", 1)).rejects.toMatchObject({ reason: "DiskFloor", endpoint: a.url });
    await expect(c.put("k", 2)).resolves.toMatchObject({ version: 1 });
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
  });

  it("waits out Retry-After before asking a voter that refused again", async () => {
    const a = await voter(httpPool("1"), OK_PUT);
    const b = await voter(httpPool("1"));
    await client([a.url, b.url], { random: () => 0 }).put("k", 1);
    // a, then b at once, then a again once b's Retry-After has passed.
    expect([a.requests.length, b.requests.length]).toEqual([2, 1]);
    expect(b.requests[0]!.at - a.requests[0]!.at).toBeLessThan(500);
    expect(a.requests[1]!.at - b.requests[0]!.at).toBeGreaterThanOrEqual(990);
  });

  it.each([
    ["DiskFloor", diskFloor("1")],
    ["an HTTP pool's", httpPool("1")],
  ])("does not feed the lane's throttle: %s", async (_, refusal) => {
    const v = await voter(refusal);
    // One refusal counted would make the probability (1 − 0) / 2 = 0.5 > 0.4.
    const c = client([v.url], {
      adaptiveThrottle: { k: 2 },
      retryResourceExhausted: false,
      random: () => 0.4,
    });
    for (let i = 0; i < 3; i++) {
      const error = await c.put("k", i).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResourceExhaustedError);
      expect(error).not.toMatchObject({ governor: "client" });
    }
    expect(v.requests).toHaveLength(3);
  });

  it.each([
    ["a command governor's, not saying whose", commandCount],
    ["a command governor's", commandBytes(true)],
    ["a disk floor's", leaderDiskFloor],
  ])("keeps a call on a voter relaying the leader's refusal, %s, and throttles on it", async (_, refusal) => {
    const a = await voter(refusal, OK_PUT);
    const b = await voter(OK_PUT);
    await client([a.url, b.url]).put("k", 1);
    expect([a.requests.length, b.requests.length]).toEqual([2, 0]);

    a.script(refusal);
    const c = client([a.url, b.url], {
      adaptiveThrottle: { k: 2 },
      retryResourceExhausted: false,
      random: () => 0.4,
    });
    await expect(c.put("k", 2)).rejects.toMatchObject({ governor: "command" });
    await expect(c.put("k", 3)).rejects.toMatchObject({ governor: "client", reason: "ClientThrottled" });
    expect([a.requests.length, b.requests.length]).toEqual([3, 0]);
  });

  it("moves a read on alike", async () => {
    const a = await voter(httpPool());
    const b = await voter(DOC);
    await expect(client([a.url, b.url]).get("k")).resolves.toMatchObject({ version: 1 });
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
  });
});
