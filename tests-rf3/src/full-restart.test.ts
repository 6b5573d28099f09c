import type { TestCluster } from "@keyload/apphost/testing";
import type { KeyLoadClient } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";

/**
 * A whole cluster restarted, on three voter processes: every voter stopped (gracefully, then with
 * SIGKILL) and started again; everything acknowledged before survives, through every voter, and the
 * principal catalog with it (the tenant's key still works, a deleted key still does not).
 */
const startCluster = clusterPerTest();

interface Acknowledged {
  readonly round: string;
  readonly documents: Readonly<Record<string, { value: unknown; version: number }>>;
  readonly commandIds: readonly string[];
  readonly enqueued: readonly string[];
  readonly dispatched: number;
}

async function writeEverything(client: KeyLoadClient, round: string): Promise<Acknowledged> {
  const documents: Record<string, { value: unknown; version: number }> = {};
  const commandIds: string[] = [];
  for (let i = 0; i < 20; i++) {
    const key = `${round}/${i % 8}`;
    const put = await client.put(key, { i });
    documents[key] = { value: { i }, version: put.version };
    commandIds.push(put.commandId);
  }
  const deleted = await client.delete(`${round}/7`);
  delete documents[`${round}/7`];
  commandIds.push(deleted.commandId);
  const tx = await client.transaction({
    operations: [
      { op: "put", key: `${round}/tx-a`, value: "a", expectedVersion: 0 },
      { op: "put", key: `${round}/tx-b`, value: "b", expectedVersion: 0 },
    ],
  });
  documents[`${round}/tx-a`] = { value: "a", version: 1 };
  documents[`${round}/tx-b`] = { value: "b", version: 1 };
  commandIds.push(tx.commandId);
  const enqueued: string[] = [];
  for (let i = 0; i < 3; i++) enqueued.push((await client.enqueue(`${round}-jobs`, { i })).messageId);
  let dispatched = 0;
  for (let i = 0; i < 4; i++) dispatched = (await client.dispatch(round, "step", { i })).sequence;
  return { round, documents, commandIds, enqueued, dispatched };
}

async function expectSurvived(
  cluster: TestCluster,
  client: KeyLoadClient,
  acked: Acknowledged,
): Promise<void> {
  for (const [v, voter] of cluster.voters.entries()) {
    const at = { endpoint: voter.httpUrl };
    const items = (await client.query({ prefix: `${acked.round}/`, limit: 100 }, at)).items;
    expect(Object.fromEntries(items.map((d) => [d.key, { value: d.value, version: d.version }]))).toEqual(
      acked.documents,
    );
    // Each outcome through one voter, in turn: the documents above already come from all three.
    for (const id of acked.commandIds.filter((_, i) => i % cluster.voters.length === v)) {
      expect(await client.getCommand(id, at)).toMatchObject({ commandId: id, status: "committed" });
    }
    const directives = (await client.readDispatch(acked.round, at)).directives;
    expect(directives.at(-1)?.sequence).toBe(acked.dispatched);
  }
}

describe("a full restart", () => {
  it("keeps everything acknowledged when all three voters stop and start, gracefully or killed", async () => {
    const cluster = await startCluster({
      voterEnv: {
        voter1: { KeyLoad__CommandAdmission__MaxCommands: "100" },
        voter2: { KeyLoad__CommandAdmission__MaxCommands: "110" },
        voter3: { KeyLoad__CommandAdmission__MaxCommands: "120" },
      },
    });
    const tenant = await cluster.createTenant({ keys: 2 });
    const admin = cluster.adminClient();
    await admin.deleteKey(tenant.principalId, tenant.keys[1]!.keyId);
    const client = cluster.client(tenant.apiKey);
    const acked = await writeEverything(client, "stopped");

    await Promise.all(cluster.voters.map((v) => cluster.stop(v.name)));
    await Promise.all(cluster.voters.map((v) => cluster.start(v.name)));
    await cluster.waitForReady();
    await expectSurvived(cluster, client, acked);

    // No voter gets to flush anything: what was acknowledged was already durable on a quorum.
    const more = await writeEverything(client, "killed");
    await Promise.all(cluster.voters.map((v) => cluster.kill(v.name)));
    await Promise.all(cluster.voters.map((v) => cluster.start(v.name)));
    await cluster.waitForReady();
    await expectSurvived(cluster, client, more);
    await expectSurvived(cluster, client, acked);

    const revoked = cluster.client(tenant.keys[1]!.apiKey, { maxAttempts: 1 });
    await expect(revoked.get("stopped/0")).rejects.toMatchObject({ code: "Unauthenticated" });
    for (const { round, enqueued } of [acked, more]) {
      const lease = await client.lease(`${round}-jobs`, { max: 10 });
      expect(lease.messages.map((m) => m.messageId)).toEqual(enqueued);
      for (const m of lease.messages) await client.ack(`${round}-jobs`, m.messageId, lease.leaseToken!);
    }
  });
});
