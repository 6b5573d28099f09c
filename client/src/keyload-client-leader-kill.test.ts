import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY } from "../../node/src/voter/testing/cluster-envs.js";
import { TestClients } from "./testing/test-clients.js";
import { VoterProcesses } from "./testing/voter-processes.js";
import { writeThroughLeaderLoss } from "./testing/writes-through-leader-loss.js";

/** A leader SIGKILLed with writes in flight, against three voter processes on loopback. */
let cluster: VoterProcesses;
const clients = new TestClients({ apiKey: ADMIN_KEY, adaptiveThrottle: false });
const connect = clients.connect.bind(clients);

beforeAll(async () => {
  cluster = await VoterProcesses.start();
  await cluster.waitForLeader();
}, 60_000);

afterAll(async () => {
  await clients.close();
  await cluster?.dispose();
});

describe("KeyLoadClient when the leader is killed", () => {
  it("retries the writes it had in flight under their own IDs, and each applies exactly once", async () => {
    const leader = await cluster.waitForLeader();
    const survivors = [0, 1, 2].filter((i) => i !== leader).map((i) => cluster.url(i));
    // Every call in flight loses the leader at once; the default budget is sized to stop such retry
    // storms against an overloaded cluster, which is not what this test is about.
    const client = connect([cluster.url(leader), ...survivors], { retryBudget: { capacity: 100 } });
    // Settle the connections to the leader first, so the writes below reach it rather than race the kill.
    await client.put("killed/warm", 0);

    const reader = connect(survivors);
    const { count } = await writeThroughLeaderLoss({
      client,
      reader,
      prefix: "killed",
      inFlightMs: 5,
      loseLeader: () => cluster.kill(leader),
    });

    // The killed voter comes back from its data directory and agrees.
    cluster.start(leader);
    await cluster.waitForLeader();
    for (let i = 0; i < count; i++) {
      expect(await reader.get(`killed/${i}`, { endpoint: cluster.url(leader) })).toMatchObject({
        version: 1,
      });
    }
  }, 60_000);
});
