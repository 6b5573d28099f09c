import type { TestCluster, TestVoter } from "@keyload/apphost/testing";
import type { KeyLoadClient } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { closeAll, holdDataSlot } from "./test-fixtures/held-data-slots.js";
import { waitForMetric } from "./test-fixtures/metric-wait.js";
import type { RawRequest } from "./test-fixtures/raw-request.js";
import { metricOf } from "./test-fixtures/voter-metrics.js";
import { ensureFollower, ensureLeader } from "./test-fixtures/voter-roles.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

const startCluster = clusterPerTest();

/** The one voter whose public data pool the test fills: three slots, against the default 32. */
const SMALL_POOL = { KeyLoad__HttpAdmission__MaxRequests: "3" };
/** Forwarded to every voter: the control pool, which the tests write through while the data pool is full. */
const SHARED = { KeyLoad__HttpAdmission__ControlMaxRequests: "12" };

/**
 * Fills `voter`'s data pool from raw connections, waits until the voter holds every slot, and checks
 * that a data request of `writer`'s to it is then refused for want of one.
 */
async function fillDataPool(
  voter: TestVoter,
  apiKey: string,
  writer: KeyLoadClient,
  operator: KeyLoadClient,
  held: RawRequest[],
): Promise<void> {
  for (const n of [1, 2, 3]) held.push(holdDataSlot(voter.httpUrl, apiKey, `held-${n}`));
  await waitForMetric(operator, voter.httpUrl, "keyload_http_admission_requests", { pool: "data" }, 3);
  await expect(writer.get("acme/anything", { endpoint: voter.httpUrl })).rejects.toMatchObject({
    code: "ResourceExhausted",
    reason: "HttpRequests",
    governor: "http",
    pool: "data",
    status: 429,
  });
}

/** The tests' tenant, a writer of it that sends each request once, and an operator reading /metrics. */
async function clientsOf(
  cluster: TestCluster,
): Promise<{ tenant: { apiKey: string }; writer: KeyLoadClient; operator: KeyLoadClient }> {
  const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-app" });
  const writer = cluster.client(tenant.apiKey, { maxAttempts: 1, adaptiveThrottle: false });
  return { tenant, writer, operator: cluster.client(cluster.adminKey) };
}

/** Waits until `voter` reports (on `/health/ready`) that it has applied the entry at `index`. */
function appliedThrough(operator: KeyLoadClient, voter: TestVoter, index: number): Promise<true> {
  return waitUntil(`${voter.name} to apply index ${index}`, async (seen) => {
    const health = await operator.ready({ endpoint: voter.httpUrl });
    seen(health.detail);
    return typeof health.detail.applied === "number" && health.detail.applied >= index ? true : undefined;
  });
}

/** Liveness and readiness answer on `voter`, whatever its pools hold. */
async function expectHealthy(operator: KeyLoadClient, voter: TestVoter, role: string): Promise<void> {
  await expect(operator.live({ endpoint: voter.httpUrl })).resolves.toMatchObject({ live: true });
  await expect(operator.ready({ endpoint: voter.httpUrl })).resolves.toMatchObject({
    ready: true,
    detail: { role },
  });
}

function others(cluster: TestCluster, voter: TestVoter): TestVoter[] {
  return cluster.voters.filter((v) => v.name !== voter.name);
}

describe("peer traffic spends no public pool", () => {
  it("with the leader's data pool full, writes forwarded by the followers commit and replicate, and its health probes answer", async () => {
    const cluster = await startCluster({ env: SHARED, voterEnv: { voter1: SMALL_POOL } });
    const leader = await ensureLeader(cluster, "voter1");
    const followers = others(cluster, leader);
    const { tenant, writer, operator } = await clientsOf(cluster);

    const held: RawRequest[] = [];
    try {
      await fillDataPool(leader, tenant.apiKey, writer, operator, held);

      // Each follower forwards its writes over the peer port; the leader commits them, which takes its
      // appends reaching a follower and that follower's acknowledgement coming back.
      for (const follower of followers) {
        for (const n of [1, 2]) {
          await expect(
            writer.put(
              `acme/${follower.name}-${n}`,
              { n },
              {
                endpoint: follower.httpUrl,
                commandId: `${follower.name}-${n}`,
              },
            ),
          ).resolves.toMatchObject({ version: 1 });
        }
      }
      // A read through a follower: its read index comes from the leader over the peer port.
      const last = followers[1]!;
      await expect(writer.get(`acme/${last.name}-2`, { endpoint: followers[0]!.httpUrl })).resolves.toEqual({
        key: `acme/${last.name}-2`,
        value: { n: 2 },
        version: 1,
      });
      const { index } = await writer.getCommand(`${last.name}-2`, { endpoint: followers[0]!.httpUrl });
      for (const follower of followers) await appliedThrough(operator, follower, index);

      await expectHealthy(operator, leader, "leader");
      // The control pool is a reserve of its own: a control write to the leader itself commits.
      await expect(
        writer.dispatch("acme-channel", "rebalance", { n: 1 }, { endpoint: leader.httpUrl }),
      ).resolves.toMatchObject({ sequence: 1 });
      // None of this took or freed a slot of the full pool.
      expect(
        await metricOf(operator, leader.httpUrl, "keyload_http_admission_requests", { pool: "data" }),
      ).toBe(3);
    } finally {
      closeAll(held);
    }
    await waitForMetric(operator, leader.httpUrl, "keyload_http_admission_requests", { pool: "data" }, 0);
    await expect(
      writer.get(`acme/${followers[0]!.name}-1`, { endpoint: leader.httpUrl }),
    ).resolves.toMatchObject({ version: 1 });
  });

  it("with a follower's data pool full, its control writes are forwarded and commit, the leader's writes replicate to it, and its health probes answer", async () => {
    const cluster = await startCluster({ env: SHARED, voterEnv: { voter2: SMALL_POOL } });
    const leader = await ensureFollower(cluster, "voter2");
    const follower = cluster.voter("voter2");
    const other = others(cluster, leader).find((v) => v.name !== follower.name)!;
    const { tenant, writer, operator } = await clientsOf(cluster);

    const held: RawRequest[] = [];
    try {
      await fillDataPool(follower, tenant.apiKey, writer, operator, held);

      // A control write sent to the follower spends its control pool, and is forwarded to the leader
      // over the peer port; a control read through it gets its read index from the leader.
      await expect(
        writer.dispatch("acme-channel", "rebalance", { n: 1 }, { endpoint: follower.httpUrl }),
      ).resolves.toMatchObject({ channel: "acme-channel", sequence: 1 });
      await expect(
        writer.readDispatch("acme-channel", { endpoint: follower.httpUrl }),
      ).resolves.toMatchObject({
        directives: [{ sequence: 1, directive: "rebalance", data: { n: 1 } }],
      });

      // With the other follower stopped, a write to the leader commits only if the leader's append
      // reaches this follower and its acknowledgement comes back.
      cluster.pause(other.name);
      try {
        await expect(
          writer.put("acme/replicated", { n: 1 }, { endpoint: leader.httpUrl, commandId: "replicated-1" }),
        ).resolves.toMatchObject({ version: 1 });
      } finally {
        cluster.resume(other.name);
      }
      const { index } = await writer.getCommand("replicated-1", { endpoint: leader.httpUrl });
      await appliedThrough(operator, follower, index);

      await expectHealthy(operator, follower, "follower");
      expect(
        await metricOf(operator, follower.httpUrl, "keyload_http_admission_requests", { pool: "data" }),
      ).toBe(3);
    } finally {
      closeAll(held);
    }
    await waitForMetric(operator, follower.httpUrl, "keyload_http_admission_requests", { pool: "data" }, 0);
    // Released, the follower serves the replicated write itself.
    await expect(writer.get("acme/replicated", { endpoint: follower.httpUrl })).resolves.toEqual({
      key: "acme/replicated",
      value: { n: 1 },
      version: 1,
    });
  });
});
