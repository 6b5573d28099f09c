import { afterEach, describe, expect, it } from "vitest";
import { dumpLogsOnFailure, startCluster, type TestCluster } from "./index.js";

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.dispose();
  cluster = undefined;
});

describe("writes in flight when the leader is SIGKILLed", () => {
  it("are retried by the client under their own IDs and applied exactly once", async (context) => {
    cluster = await startCluster();
    dumpLogsOnFailure(context, cluster);
    const leader = await cluster.waitForLeader();
    const client = cluster.client(cluster.adminKey, {
      retryBudget: { capacity: 100 },
      adaptiveThrottle: false,
    });
    const count = 20;
    const puts = Array.from({ length: count }, (_, i) =>
      client.put(`kill9/${i}`, { i }, { commandId: `k9-${i}` }),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    await cluster.kill(leader.name);
    const results = await Promise.all(puts);
    for (let i = 0; i < count; i++) expect(results[i]).toMatchObject({ commandId: `k9-${i}`, version: 1 });

    await cluster.waitForLeader();
    for (let i = 0; i < count; i++) {
      // A second application would have made version 2.
      expect(await client.get(`kill9/${i}`)).toEqual({ key: `kill9/${i}`, value: { i }, version: 1 });
    }
    // The killed voter comes back and catches up to the same state.
    await cluster.start(leader.name);
    const back = cluster.voters.find((v) => v.name === leader.name)!;
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        const doc = await client.get(`kill9/${count - 1}`, { endpoint: back.httpUrl });
        expect(doc.version).toBe(1);
        break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }, 90_000);
});
