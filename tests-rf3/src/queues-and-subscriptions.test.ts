import {
  type Change,
  type CompleteDeliveryResult,
  type CompleteResult,
  FailedPreconditionError,
  type KeyLoadClient,
  LeaseLostError,
  UnknownWriteOutcomeError,
  type WriteOptions,
} from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { errorLine, waitUntil } from "./test-fixtures/wait-until.js";

const startCluster = clusterPerTest();

/**
 * Sends a write under `commandId`; should its outcome be left unknown (a voter killed under it), it is
 * resubmitted under that same ID until the outcome is known.
 */
async function once<T>(
  client: KeyLoadClient,
  commandId: string,
  submit: (options: WriteOptions) => Promise<T>,
): Promise<T> {
  try {
    return await submit({ commandId });
  } catch (error) {
    if (!(error instanceof UnknownWriteOutcomeError)) throw error;
    return client.resolveOutcome(commandId, submit);
  }
}

/** The part of a change a subscriber acts on. */
function summary(change: Change): { kind: Change["kind"]; key: string; version: number | null } {
  return { kind: change.kind, key: change.key, version: change.version };
}

describe("queues and subscriptions", () => {
  it("queue messages: lease, expiry and redelivery, renew, NACK, ACK, and a stale lease token", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__CommandAdmission__ControlMaxCommandsPerPrincipal: "6" },
      voterEnv: { voter2: { KeyLoad__HttpAdmission__ControlMaxRequests: "12" } },
    });
    const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-worker" });
    const client = cluster.client(tenant.apiKey, { adaptiveThrottle: false });
    const queue = "jobs";

    // A short lease expires and the message is delivered again, under a new token.
    const job1 = await client.enqueue(queue, { job: 1 });
    const first = await client.lease<{ job: number }>(queue, { max: 1, visibilityTimeoutMs: 3000 });
    expect(first.messages).toEqual([
      { messageId: job1.messageId, body: { job: 1 }, attempts: 1, enqueuedAtMs: expect.any(Number) },
    ]);
    expect(await client.lease(queue)).toMatchObject({ leaseToken: null, messages: [] });
    const again = await waitUntil("the expired lease's message to be delivered again", async (seen) => {
      const lease = await client.lease<{ job: number }>(queue, { max: 1, visibilityTimeoutMs: 60_000 });
      seen(lease);
      return lease.messages.length > 0 ? lease : undefined;
    });
    expect(again.messages).toEqual([
      {
        messageId: job1.messageId,
        body: { job: 1 },
        attempts: 2,
        enqueuedAtMs: first.messages[0]!.enqueuedAtMs,
      },
    ]);
    expect(again.leaseToken).not.toBe(first.leaseToken);
    // The first token lost the message when its lease expired.
    await expect(client.ack(queue, job1.messageId, first.leaseToken!)).rejects.toMatchObject({
      code: "LeaseLost",
      status: 409,
    });
    await client.ack(queue, job1.messageId, again.leaseToken!);
    expect(await client.lease(queue)).toMatchObject({ messages: [] });

    // A renewed lease outlives its first expiry: the message stays hidden and the token stays good.
    const job2 = await client.enqueue(queue, { job: 2 });
    const held = await client.lease(queue, { max: 1, visibilityTimeoutMs: 4000 });
    expect(held.messages.map((m) => m.messageId)).toEqual([job2.messageId]);
    const renewed = await client.renew(queue, job2.messageId, held.leaseToken!, {
      visibilityTimeoutMs: 60_000,
    });
    expect(renewed.leaseExpiresAtMs).toBeGreaterThan(held.leaseExpiresAtMs!);
    await waitUntil("the first expiry of the renewed lease to pass", async () =>
      Date.now() > held.leaseExpiresAtMs! + 500 ? true : undefined,
    );
    expect(await client.lease(queue)).toMatchObject({ messages: [] });
    await client.ack(queue, job2.messageId, held.leaseToken!);

    // NACK returns a message at once; the token it was leased with is then stale.
    const job3 = await client.enqueue(queue, { job: 3 });
    const nacked = await client.lease(queue, { max: 1 });
    expect(await client.nack(queue, job3.messageId, nacked.leaseToken!)).toMatchObject({
      messageId: job3.messageId,
      deadLettered: false,
    });
    const redelivered = await client.lease<{ job: number }>(queue, { max: 1 });
    expect(redelivered.messages).toMatchObject([
      { messageId: job3.messageId, body: { job: 3 }, attempts: 2 },
    ]);
    const stale = client.ack(queue, job3.messageId, nacked.leaseToken!);
    await expect(stale).rejects.toBeInstanceOf(LeaseLostError);
    await client.ack(queue, job3.messageId, redelivered.leaseToken!);
    expect(await client.lease(queue, { max: 10 })).toMatchObject({ leaseToken: null, messages: [] });
  });

  it("subscription deliveries see the catalog's changes in order, each acknowledged once", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__CommandAdmission__ControlMaxCommandsPerTenant: "6" },
      voterEnv: { voter3: { KeyLoad__HttpAdmission__ControlMaxRequestsPerPrincipal: "4" } },
    });
    const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-projector" });
    const client = cluster.client(tenant.apiKey, { adaptiveThrottle: false });
    const name = "orders-feed";
    expect(await client.putSubscription(name, "orders/")).toMatchObject({ created: true, cursor: 0 });

    await client.put("orders/1", { total: 1 });
    await client.put("orders/2", { total: 2 });
    await client.put("customers/1", { name: "Ada" });
    await client.put("orders/1", { total: 10 });
    await client.delete("orders/2");
    await client.putEdge({ from: "orders/1", type: "placed-by", to: "customers/1" });
    const expected = [
      { kind: "put", key: "orders/1", version: 1 },
      { kind: "put", key: "orders/2", version: 1 },
      { kind: "put", key: "orders/1", version: 2 },
      { kind: "delete", key: "orders/2", version: 2 },
      { kind: "edge.put", key: "orders/1", version: null },
    ];
    const acknowledged: Change[] = [];

    const d1 = await client.deliver(name, { max: 2 });
    expect(d1.changes.map(summary)).toEqual(expected.slice(0, 2));
    // One delivery is outstanding at a time.
    await expect(client.deliver(name, { max: 2 })).rejects.toBeInstanceOf(FailedPreconditionError);
    await client.ackDelivery(name, d1.deliveryId!);
    acknowledged.push(...d1.changes);

    // A delivery that is not acknowledged in time is delivered again, the same changes, under a new ID.
    const lapsed = await client.deliver(name, { max: 2, visibilityTimeoutMs: 1000 });
    expect(lapsed.changes.map(summary)).toEqual(expected.slice(2, 4));
    const redelivered = await waitUntil("the lapsed delivery to be delivered again", async (seen) => {
      try {
        return await client.deliver(name, { max: 2 });
      } catch (error) {
        seen(errorLine(error));
        if (error instanceof FailedPreconditionError) return undefined;
        throw error;
      }
    });
    expect(redelivered.changes).toEqual(lapsed.changes);
    expect(redelivered.deliveryId).not.toBe(lapsed.deliveryId);
    await expect(client.ackDelivery(name, lapsed.deliveryId!)).rejects.toBeInstanceOf(LeaseLostError);
    await client.ackDelivery(name, redelivered.deliveryId!);
    acknowledged.push(...redelivered.changes);

    const d3 = await client.deliver(name, { max: 2 });
    expect(d3.changes.map(summary)).toEqual(expected.slice(4));
    await client.ackDelivery(name, d3.deliveryId!);
    acknowledged.push(...d3.changes);
    // Nothing is left, and nothing acknowledged comes again.
    expect(await client.deliver(name)).toMatchObject({ deliveryId: null, changes: [] });

    // A change made later is delivered after them.
    await client.put("orders/3", { total: 3 });
    const d4 = await client.deliver(name);
    expect(d4.changes.map(summary)).toEqual([{ kind: "put", key: "orders/3", version: 1 }]);
    expect(d4.changes[0]!.value).toEqual({ total: 3 });
    await client.ackDelivery(name, d4.deliveryId!);
    acknowledged.push(...d4.changes);

    expect(acknowledged.map(summary)).toEqual([...expected, { kind: "put", key: "orders/3", version: 1 }]);
    const seqs = acknowledged.map((c) => c.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    // The superseded put delivers no stale document; the current one is delivered as written.
    expect(acknowledged[0]).toMatchObject({ superseded: true, value: null });
    expect(acknowledged[2]).toMatchObject({ superseded: false, value: { total: 10 } });
  });

  it("processing and projection effects apply exactly once under retries with their command IDs, across leader SIGKILLs", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__CommandAdmission__MaxCommandsPerPrincipal: "32" },
      voterEnv: { voter1: { KeyLoad__CommandAdmission__ControlMaxCommands: "24" } },
    });
    const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-orders" });
    // Retries through a failover must not run out of budget.
    const client = cluster.client(tenant.apiKey, { adaptiveThrottle: false, retryBudget: { capacity: 200 } });
    const count = 8;
    const jobs = Array.from({ length: count }, (_, n) => n);
    for (const n of jobs) await once(client, `enqueue-${n}`, (o) => client.enqueue("jobs", { n }, o));
    await client.putSubscription("projector", "orders/");

    // Processing: every job completes (ack + order document + outbox email, atomically).
    const lease = await once(client, "lease-1", (o) =>
      client.lease<{ n: number }>("jobs", { max: count, visibilityTimeoutMs: 300_000 }, o),
    );
    expect(lease.messages).toHaveLength(count);
    const complete = (messageId: string, n: number) => (o: WriteOptions) =>
      client.complete(
        "jobs",
        messageId,
        lease.leaseToken!,
        {
          operations: [{ op: "put", key: `orders/${n}`, value: { n }, expectedVersion: 0 }],
          outbox: [{ queue: "emails", body: { n } }],
        },
        o,
      );
    // The completions go one after another; the leader is killed once three are done, so the fourth is
    // on its way and the rest follow through the failover.
    const firstLeader = await cluster.waitForLeader();
    let processed = 0;
    const processing = (async () => {
      const results: CompleteResult[] = [];
      for (const m of lease.messages) {
        results.push(await once(client, `complete-${m.body.n}`, complete(m.messageId, m.body.n)));
        processed++;
      }
      return results;
    })();
    processing.catch(() => undefined);
    await waitUntil("three jobs to complete", async () => (processed >= 3 ? true : undefined), {
      intervalMs: 5,
    });
    await cluster.kill(firstLeader.name);
    const completed = await processing;
    // Sent again under the same IDs, each answers its original outcome and applies nothing more.
    for (const [i, m] of lease.messages.entries()) {
      expect(await complete(m.messageId, m.body.n)({ commandId: `complete-${m.body.n}` })).toEqual(
        completed[i],
      );
    }
    await cluster.start(firstLeader.name);
    await cluster.waitForReady();

    // Projection: deliveries of the order documents, each completed (ack + projection, atomically),
    // one after another; the new leader is killed once the first is done.
    const secondLeader = await cluster.waitForLeader();
    let rounds = 0;
    const projecting = (async () => {
      const done: {
        changes: readonly Change[];
        redo: () => Promise<CompleteDeliveryResult>;
        result: CompleteDeliveryResult;
      }[] = [];
      for (let round = 1; ; round++) {
        const delivery = await once(client, `deliver-${round}`, (o) =>
          client.deliver("projector", { max: 3, visibilityTimeoutMs: 300_000 }, o),
        );
        if (delivery.deliveryId === null) return done;
        const project = (o: WriteOptions) =>
          client.completeDelivery(
            "projector",
            delivery.deliveryId!,
            {
              operations: delivery.changes.map((c) => ({
                op: "put" as const,
                key: `projection/${c.key}`,
                value: { seq: c.seq, from: c.value },
                expectedVersion: 0,
              })),
            },
            o,
          );
        const commandId = `project-${round}`;
        const result = await once(client, commandId, project);
        done.push({ changes: delivery.changes, redo: () => project({ commandId }), result });
        rounds++;
      }
    })();
    projecting.catch(() => undefined);
    await waitUntil("the first delivery to be projected", async () => (rounds >= 1 ? true : undefined), {
      intervalMs: 5,
    });
    await cluster.kill(secondLeader.name);
    const projected = await projecting;
    expect(projected.length).toBeGreaterThan(1);
    for (const round of projected) expect(await round.redo()).toEqual(round.result);
    await cluster.start(secondLeader.name);
    await cluster.waitForReady();

    // Exactly once: each job's order document at version 1 (a second application would have failed
    // its expectedVersion or made version 2), one email per job, no job left, one projection per order.
    for (const n of jobs) {
      expect(await client.get(`orders/${n}`)).toEqual({ key: `orders/${n}`, value: { n }, version: 1 });
      expect(await client.get(`projection/orders/${n}`)).toMatchObject({
        version: 1,
        value: { from: { n } },
      });
    }
    const emails = await client.lease<{ n: number }>("emails", { max: 100 });
    expect(emails.messages.map((m) => m.body.n).sort((a, b) => a - b)).toEqual(jobs);
    expect(await client.lease("jobs", { max: 100 })).toMatchObject({ messages: [] });
    expect(projected.flatMap((round) => round.changes.map((c) => c.key)).sort()).toEqual(
      jobs.map((n) => `orders/${n}`).sort(),
    );
    for (const n of jobs) {
      expect(await client.getCommand(`complete-${n}`)).toMatchObject({ status: "committed" });
    }
  });
});
