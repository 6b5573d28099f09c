import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";

const startCluster = clusterPerTest();
const connect = clientsPerTest();

// A port nobody listens on is the client's own unit test (keyload-client-retries.test.ts); here the
// closed port is a real voter's, stopped.
describe("KeyLoadClient failover", () => {
  it("fails over from a stopped voter to a live one, and stays there", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const stopped = cluster.voters.find((v) => v.name !== leader.name)!;
    await cluster.stop(stopped.name);
    const client = connect({ endpoints: [stopped.httpUrl, leader.httpUrl], apiKey: cluster.adminKey });
    expect(await client.put("fo/stopped", "v")).toMatchObject({ key: "fo/stopped", version: 1 });
    expect(client.preferredEndpoint).toBe(leader.httpUrl);
    expect((await client.get("fo/stopped")).version).toBe(1);
    await cluster.start(stopped.name);
  });
});
