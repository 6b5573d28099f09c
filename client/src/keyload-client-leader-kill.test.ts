import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY } from "../../node/src/voter/testing/cluster-envs.js";
import { SentCommandIds } from "./testing/sent-command-ids.js";
import { TestClients } from "./testing/test-clients.js";
import { VoterProcesses } from "./testing/voter-processes.js";

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

    const count = 10;
    const sent = new SentCommandIds();
    const puts = Array.from({ length: count }, (_, i) =>
      client.put(`killed/${i}`, { i }, { commandId: `killed-put-${i}` }),
    );
    const enqueues = Array.from({ length: count }, (_, i) =>
      client.enqueue("killed-queue", { i }, { commandId: `killed-enq-${i}` }),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
    await cluster.kill(leader);
    const settled = await Promise.allSettled([...puts, ...enqueues]);
    sent.close();
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);
    // Without a write that went out again, the exactly-once checks below would prove nothing about retries.
    const ids = Array.from({ length: count }, (_, i) => [`killed-put-${i}`, `killed-enq-${i}`]).flat();
    expect(ids.filter((id) => sent.count(id) > 1).length).toBeGreaterThan(0);
    const putResults = await Promise.all(puts);
    const enqueueResults = await Promise.all(enqueues);

    const reader = connect(survivors);
    for (let i = 0; i < count; i++) {
      expect(putResults[i]).toEqual({ commandId: `killed-put-${i}`, key: `killed/${i}`, version: 1 });
      // A second application would have made version 2.
      expect(await reader.get(`killed/${i}`)).toEqual({ key: `killed/${i}`, value: { i }, version: 1 });
      expect(await reader.getCommand(`killed-put-${i}`)).toMatchObject({
        status: "committed",
        result: { version: 1 },
      });
    }
    // A second application would have enqueued a second message with the same body.
    const lease = await reader.lease<{ i: number }>("killed-queue", { max: 100 });
    expect(lease.messages.map((m) => m.body.i).sort((a, b) => a - b)).toEqual(
      Array.from({ length: count }, (_, i) => i),
    );
    expect(new Set(lease.messages.map((m) => m.messageId))).toEqual(
      new Set(enqueueResults.map((r) => r.messageId)),
    );

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
