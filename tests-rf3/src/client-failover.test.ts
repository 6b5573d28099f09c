import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./support/clients-per-test.js";
import { closedPort } from "./support/closed-port.js";
import { clusterPerTest } from "./support/cluster-per-test.js";

const startCluster = clusterPerTest();
const connect = clientsPerTest();

describe("KeyLoadClient failover", () => {
  it("fails over from a closed port and from a stopped voter to a live one, and stays there", async () => {
    const cluster = await startCluster();
    const leader = await cluster.waitForLeader();
    const [first, ...rest] = cluster.voters.map((v) => v.httpUrl);
    const dead = await closedPort();
    const client = connect({ endpoints: [dead, first!, ...rest], apiKey: cluster.adminKey });
    const put = await client.put("fo/closed", 1, { commandId: "fo-closed" });
    expect(put).toEqual({ commandId: "fo-closed", key: "fo/closed", version: 1 });
    expect(client.preferredEndpoint).toBe(first);
    expect((await client.get("fo/closed")).version).toBe(1);

    const stopped = cluster.voters.find((v) => v.name !== leader.name)!;
    await cluster.stop(stopped.name);
    const survivor = connect({ endpoints: [stopped.httpUrl, leader.httpUrl], apiKey: cluster.adminKey });
    expect(await survivor.put("fo/stopped", "v")).toMatchObject({ key: "fo/stopped", version: 1 });
    expect(survivor.preferredEndpoint).toBe(leader.httpUrl);
  });
});
