import type { TestCluster } from "@keyload/apphost/testing";
import { type Document, NotFoundError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";
import { SteadyWriteLoad } from "./test-fixtures/steady-write-load.js";
import { writeThroughLeaderLoss } from "./test-fixtures/writes-through-leader-loss.js";

const ELECTION_TIMEOUT_MS = 500;
/**
 * How soon after the leader dies another must lead. Check-quorum and the election timeout T put the
 * first campaign within [T, 2T) of the last heartbeat; 4T allows a split vote and a second round, and
 * the seconds on top allow for a machine busy with other clusters (process scheduling, fsync).
 */
const ELECTION_BOUND_MS = 4 * ELECTION_TIMEOUT_MS + 4_000;

/** Room for every write of the test in flight at once: these tests are about failures, not admission. */
const ROOMY_ADMISSION = {
  KeyLoad__HttpAdmission__MaxRequests: "64",
  KeyLoad__HttpAdmission__MaxRequestsPerTenant: "64",
  KeyLoad__HttpAdmission__MaxRequestsPerPrincipal: "64",
};

const startCluster = clusterPerTest();
const connect = clientsPerTest();

/** Every document under `prefix/` as one voter reads it, by key. */
async function documentsOn(
  cluster: TestCluster,
  endpoint: string,
  prefix: string,
): Promise<Map<string, Document>> {
  const reader = cluster.client(cluster.adminKey);
  const docs = new Map<string, Document>();
  for await (const doc of reader.queryAll({ prefix: `${prefix}/`, limit: 500 }, { endpoint })) {
    docs.set(doc.key, doc);
  }
  return docs;
}

describe("losing the leader", () => {
  it("under a steady write load (SIGKILL): a new leader within the election bound, every acknowledged write kept, every unknown one applied once", async () => {
    const cluster = await startCluster({
      env: {
        KeyLoad__Raft__ElectionTimeoutMs: String(ELECTION_TIMEOUT_MS),
        KeyLoad__Raft__HeartbeatIntervalMs: "50",
        ...ROOMY_ADMISSION,
      },
    });
    const leader = await cluster.waitForLeader();
    const survivors = cluster.voters.filter((v) => v.name !== leader.name).map((v) => v.httpUrl);
    const endpoints = [leader.httpUrl, ...survivors];
    const writer = (maxAttempts?: number) =>
      connect({
        endpoints,
        apiKey: cluster.adminKey,
        adaptiveThrottle: false,
        retryBudget: { capacity: 100 },
        ...(maxAttempts === undefined ? {} : { maxAttempts }),
      });
    // Single attempts end in UnknownWriteOutcome when the leader dies under them; retrying writers
    // ride the election out as applications do.
    const load = new SteadyWriteLoad([writer(1), writer(1), writer(1), writer(), writer()], "load");
    let electedIn: number;
    try {
      await expect.poll(() => load.acked.length, { timeout: 10_000 }).toBeGreaterThan(50);
      const killedAt = Date.now();
      await cluster.kill(leader.name);
      const next = await cluster.waitForLeader({ excluding: [leader.name], timeoutMs: ELECTION_BOUND_MS });
      electedIn = Date.now() - killedAt;
      expect(next.name).not.toBe(leader.name);
      // The new leader serves the load.
      const electedAt = Date.now();
      await expect.poll(() => load.ackedSince(electedAt), { timeout: 10_000 }).toBeGreaterThan(50);
    } finally {
      await load.stop();
    }
    expect(electedIn).toBeLessThan(ELECTION_BOUND_MS);
    // Else the check of unknown outcomes below would have nothing to check.
    expect(load.unknown.length).toBeGreaterThan(0);

    await cluster.start(leader.name);
    await cluster.waitForReady(30_000);
    const admin = cluster.adminClient();
    for (const write of load.unknown) {
      // Resubmitted under its own ID: the original outcome if it committed, its one application if not.
      const resolved = await admin.resolveOutcome(write.commandId, (o) =>
        admin.put(write.key, write.value, o),
      );
      expect(resolved).toEqual({ commandId: write.commandId, key: write.key, version: 1 });
      expect(await admin.getCommand(write.commandId)).toMatchObject({
        status: "committed",
        result: { key: write.key, version: 1 },
      });
    }
    // A refusal submitted nothing, so it never applied.
    for (const write of load.refused) {
      expect(await failure(admin.getCommand(write.commandId))).toBeInstanceOf(NotFoundError);
    }

    // Every voter, the killed one back from its data dir too, holds exactly the acknowledged and the
    // resolved writes, each applied once.
    const expected = new Map(
      [...load.acked, ...load.unknown].map((w) => [w.key, { key: w.key, value: w.value, version: 1 }]),
    );
    for (const voter of cluster.voters) {
      const docs = await documentsOn(cluster, voter.httpUrl, "load");
      expect(docs.size, voter.name).toBe(expected.size);
      expect(docs, voter.name).toEqual(expected);
    }
  });

  it("retries the writes in flight when the leader is SIGKILLed under their own IDs, and each applies once", async () => {
    const cluster = await startCluster({ env: ROOMY_ADMISSION });
    const leader = await cluster.waitForLeader();
    const survivors = cluster.voters.filter((v) => v.name !== leader.name).map((v) => v.httpUrl);
    // Every call in flight loses the leader at once; the default budget is sized to stop such retry
    // storms against an overloaded cluster, which is not what this test is about.
    const client = connect({
      endpoints: [leader.httpUrl, ...survivors],
      apiKey: cluster.adminKey,
      adaptiveThrottle: false,
      retryBudget: { capacity: 100 },
    });
    // Settle the connections to the leader first, so the writes below reach it rather than race the kill.
    await client.put("killed/warm", 0);
    const reader = connect({ endpoints: survivors, apiKey: cluster.adminKey, adaptiveThrottle: false });
    const { count } = await writeThroughLeaderLoss({
      client,
      reader,
      prefix: "killed",
      inFlightMs: 5,
      loseLeader: () => cluster.kill(leader.name),
    });

    // The killed voter comes back from its data directory and agrees.
    await cluster.start(leader.name);
    await cluster.waitForReady(30_000);
    for (let i = 0; i < count; i++) {
      expect(await reader.get(`killed/${i}`, { endpoint: leader.httpUrl })).toEqual({
        key: `killed/${i}`,
        value: { i },
        version: 1,
      });
    }
  });

  it("applies the writes in flight when the leader stops gracefully exactly once, retrying each under its own ID", async () => {
    const cluster = await startCluster({ env: ROOMY_ADMISSION });
    const leader = await cluster.waitForLeader();
    const survivors = cluster.voters.filter((v) => v.name !== leader.name).map((v) => v.httpUrl);
    const client = connect({
      endpoints: [leader.httpUrl, ...survivors],
      apiKey: cluster.adminKey,
      retryBudget: { capacity: 100 },
    });
    const reader = connect({ endpoints: survivors, apiKey: cluster.adminKey });
    // The requests are on their way (some answered, some in the leader's hands) when it goes.
    const { putResults } = await writeThroughLeaderLoss({
      client,
      reader,
      prefix: "stopped",
      inFlightMs: 2,
      loseLeader: () => cluster.stop(leader.name),
    });

    // Resubmitting after the fact changes nothing either.
    const again = await reader.resolveOutcome("stopped-put-0", (o) => reader.put("stopped/0", { i: 0 }, o));
    expect(again).toEqual(putResults[0]);
    expect((await reader.get("stopped/0")).version).toBe(1);
  });
});
