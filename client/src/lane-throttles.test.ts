import { afterEach, describe, expect, it } from "vitest";
import { KeyLoadClient, ResourceExhaustedError } from "./index.js";
import { errorBody, type ScriptedAnswer, ScriptedVoter } from "./test-fixtures/scripted-voter.js";

/**
 * The voters admit control work (leases, acks, renewals, membership, dispatch) from a reserve of its
 * own, so the client throttles each lane on that lane's refusals alone: a flood of data that the cluster
 * refuses must not make the client refuse the acks that would drain it.
 */

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close()));
});

// The command governor's: only the leader's refusals speak for the cluster, and feed the throttle.
const refused = (lane: "data" | "control"): ScriptedAnswer => ({
  status: 429,
  headers: { "retry-after": "1" },
  body: errorBody("ResourceExhausted", "CommandCount", { governor: "command", lane }),
});
const ACKED: ScriptedAnswer = { status: 200, body: { commandId: "c", queue: "q", messageId: "m" } };
const DOC: ScriptedAnswer = { status: 200, body: { key: "k", value: 1, version: 1 } };

async function setup(...answers: ScriptedAnswer[]): Promise<{ v: ScriptedVoter; c: KeyLoadClient }> {
  const v = await ScriptedVoter.start(...answers);
  const c = new KeyLoadClient({
    endpoints: [v.url],
    apiKey: "key-1",
    adaptiveThrottle: { k: 2 },
    retryResourceExhausted: false,
    // No history: probability 0; one refusal: (1 − 0) / 2 = 0.5 > 0.4.
    random: () => 0.4,
  });
  opened.push(v, c);
  return { v, c };
}

describe("one adaptive throttle per lane", () => {
  it("keeps sending control work while the data lane's refusals throttle data calls", async () => {
    const { v, c } = await setup(refused("data"), ACKED);
    await expect(c.get("k")).rejects.toMatchObject({ governor: "command", lane: "data" });
    const local = await c.put("k", 1).catch((e: unknown) => e);
    expect(local).toBeInstanceOf(ResourceExhaustedError);
    expect(local).toMatchObject({ governor: "client", reason: "ClientThrottled", details: { lane: "data" } });
    await expect(c.ack("q", "m", "token")).resolves.toMatchObject({ messageId: "m" });
    expect(v.requests.map((r) => r.url)).toEqual(["/v1/catalog/k", "/v1/queues/q/messages/m/ack"]);
  });

  it("keeps sending data work while the control lane's refusals throttle control calls", async () => {
    const { v, c } = await setup(refused("control"), DOC);
    await expect(c.renew("q", "m", "token")).rejects.toMatchObject({ lane: "control" });
    await expect(c.dispatch("ch", "go")).rejects.toMatchObject({ governor: "client" });
    await expect(c.get("k")).resolves.toMatchObject({ version: 1 });
    expect(v.requests).toHaveLength(2);
  });
});
