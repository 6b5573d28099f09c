import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, VoterCluster } from "../../node/src/voter/testing/voter-cluster.js";
import { closedPort } from "./testing/closed-port.js";
import { errorBody, ScriptedVoter } from "./testing/scripted-voter.js";
import { TestClients } from "./testing/test-clients.js";
import { writeThroughLeaderLoss } from "./testing/writes-through-leader-loss.js";

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
    const reader = connect(survivors);
    // The requests are on their way (some answered, some in the leader's hands) when it goes.
    const { putResults } = await writeThroughLeaderLoss({
      client,
      reader,
      prefix: "kill",
      inFlightMs: 2,
      loseLeader: () => cluster.stop(leader),
    });

    // Resubmitting after the fact changes nothing either.
    const again = await reader.resolveOutcome("kill-put-0", (o) => reader.put("kill/0", { i: 0 }, o));
    expect(again).toEqual(putResults[0]);
    expect((await reader.get("kill/0")).version).toBe(1);
  });
});
