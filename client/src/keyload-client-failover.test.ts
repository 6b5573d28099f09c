import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, VoterCluster } from "../../node/src/voter/testing/voter-cluster.js";
import { closedPort } from "./testing/closed-port.js";
import { errorBody, ScriptedVoter } from "./testing/scripted-voter.js";
import { SentCommandIds } from "./testing/sent-command-ids.js";
import { TestClients } from "./testing/test-clients.js";

/** Failover, leader hints and a leader lost mid-write, against a real three-voter cluster. */
let cluster: VoterCluster;
const clients = new TestClients({ apiKey: ADMIN_KEY });
const connect = clients.connect.bind(clients);

function url(i: number): string {
  return cluster.voter(i).httpUrl;
}

function follower(leader: number): number {
  return (leader + 1) % 3;
}

beforeAll(async () => {
  cluster = await VoterCluster.start({
    // Room for many writes of one principal at once: this file is about failures, not admission.
    env: {
      KeyLoad__HttpAdmission__MaxRequests: "128",
      KeyLoad__HttpAdmission__MaxRequestsPerTenant: "128",
      KeyLoad__HttpAdmission__MaxRequestsPerPrincipal: "128",
    },
  });
  await cluster.waitForLeader();
}, 30_000);

afterAll(async () => {
  await clients.close();
  await cluster?.dispose();
});

describe("KeyLoadClient failover", () => {
  it("fails over from a closed port to a live voter, and stays there", async () => {
    const dead = await closedPort();
    const client = connect([dead, url(0), url(1), url(2)]);
    const put = await client.put("fo/closed", 1, { commandId: "fo-closed" });
    expect(put).toEqual({ commandId: "fo-closed", key: "fo/closed", version: 1 });
    expect(client.preferredEndpoint).toBe(url(0));
    expect((await client.get("fo/closed")).version).toBe(1);
  });

  it("fails over from a stopped voter", async () => {
    const leader = await cluster.waitForLeader();
    const stopped = follower(leader);
    const stoppedUrl = url(stopped);
    await cluster.stop(stopped);
    try {
      const client = connect([stoppedUrl, url(leader)]);
      expect(await client.put("fo/stopped", "v")).toMatchObject({ key: "fo/stopped", version: 1 });
      expect(client.preferredEndpoint).toBe(url(leader));
    } finally {
      await cluster.restart(stopped);
    }
  });

  it("follows a voter's leader hint straight to the leader", async () => {
    const leader = await cluster.waitForLeader();
    const others = [0, 1, 2].filter((i) => i !== leader).map(url);
    const stale = await ScriptedVoter.start({
      status: 503,
      headers: { "KeyLoad-Leader": `id="voter${leader + 1}", url="${url(leader)}"` },
      body: errorBody("Unavailable", "LeaderUnreachable"),
    });
    clients.closeLater(stale);
    // Listed first and answering Unavailable with a hint: the retry skips the other voters.
    const client = connect([stale.url, ...others, url(leader)]);
    expect(await client.put("fo/hint", 1, { commandId: "fo-hint" })).toMatchObject({ version: 1 });
    expect(stale.requests.map((r) => r.headers["keyload-command-id"])).toEqual(["fo-hint"]);
    expect(client.preferredEndpoint).toBe(url(leader));
    expect(await client.getCommand("fo-hint", { endpoint: url(leader) })).toMatchObject({
      status: "committed",
    });
  });

  it("applies writes in flight when the leader stops exactly once, retrying each under its own ID", async () => {
    const leader = await cluster.waitForLeader();
    const survivors = [0, 1, 2].filter((i) => i !== leader).map(url);
    // Every call in flight loses the leader at once; the default budget is sized to stop such retry
    // storms against an overloaded cluster, which is not what this test is about.
    const client = connect([url(leader), ...survivors], { retryBudget: { capacity: 100 } });
    const count = 10;
    const sent = new SentCommandIds();
    const puts = Array.from({ length: count }, (_, i) =>
      client.put(`kill/${i}`, { i }, { commandId: `kill-put-${i}` }),
    );
    const enqueues = Array.from({ length: count }, (_, i) =>
      client.enqueue("kill-queue", { i }, { commandId: `kill-enq-${i}` }),
    );
    // The requests are on their way (some answered, some in the leader's hands) when it goes.
    await new Promise((resolve) => setTimeout(resolve, 2));
    await cluster.stop(leader);
    const settled = await Promise.allSettled([...puts, ...enqueues]);
    sent.close();
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
    // Without a write that went out again, the exactly-once checks below would prove nothing about retries.
    const ids = Array.from({ length: count }, (_, i) => [`kill-put-${i}`, `kill-enq-${i}`]).flat();
    expect(ids.filter((id) => sent.count(id) > 1).length).toBeGreaterThan(0);
    const putResults = await Promise.all(puts);
    const enqueueResults = await Promise.all(enqueues);

    const reader = connect(survivors);
    for (let i = 0; i < count; i++) {
      expect(putResults[i]).toEqual({ commandId: `kill-put-${i}`, key: `kill/${i}`, version: 1 });
      // A second application would have made version 2.
      expect(await reader.get(`kill/${i}`)).toEqual({ key: `kill/${i}`, value: { i }, version: 1 });
      expect(await reader.getCommand(`kill-put-${i}`)).toMatchObject({
        status: "committed",
        result: { version: 1 },
      });
    }
    // A second application would have enqueued a second message with the same body.
    const lease = await reader.lease<{ i: number }>("kill-queue", { max: 100 });
    const bodies = lease.messages.map((m) => m.body.i).sort((a, b) => a - b);
    expect(bodies).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(new Set(lease.messages.map((m) => m.messageId))).toEqual(
      new Set(enqueueResults.map((r) => r.messageId)),
    );

    // Resubmitting after the fact changes nothing either.
    const again = await reader.resolveOutcome("kill-put-0", (o) => reader.put("kill/0", { i: 0 }, o));
    expect(again).toEqual(putResults[0]);
    expect((await reader.get("kill/0")).version).toBe(1);
  });
});
