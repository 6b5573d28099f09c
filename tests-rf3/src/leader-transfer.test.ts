import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";

const startCluster = clusterPerTest();
const connect = clientsPerTest();

describe("handing leadership to a voter (POST /v1/admin/cluster/leader)", () => {
  it("makes the voter asked for lead, asked through a follower, and answers a repeat unchanged", async () => {
    const cluster = await startCluster({ env: FAST_RAFT });
    const leader = await cluster.waitForLeader();
    const [target, other] = cluster.voters.filter((v) => v.name !== leader.name);
    // The other follower is asked first: it answers with the leader hint, which the client follows.
    const admin = connect({
      endpoints: [other!.httpUrl, target!.httpUrl, leader.httpUrl],
      apiKey: cluster.adminKey,
    });
    expect(await admin.transferLeader(target!.name)).toEqual({ leader: target!.name, changed: true });
    expect((await cluster.waitForLeader()).name).toBe(target!.name);
    await cluster.waitForReady();
    expect(await admin.transferLeader(target!.name)).toEqual({ leader: target!.name, changed: false });
  });

  it("refuses a name that is not a voter, and answers a timeout when the voter cannot take over", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__ReplicationDeadlineMs: "2000" },
    });
    const leader = await cluster.waitForLeader();
    const admin = connect({
      endpoints: cluster.voters.map((v) => v.httpUrl),
      apiKey: cluster.adminKey,
      maxAttempts: 1,
    });
    await expect(admin.transferLeader("voter9")).rejects.toMatchObject({
      code: "InvalidArgument",
      reason: "UnknownVoterName",
    });
    const target = cluster.voters.find((v) => v.name !== leader.name)!;
    cluster.pause(target.name);
    try {
      await expect(admin.transferLeader(target.name, { endpoint: leader.httpUrl })).rejects.toMatchObject({
        code: "Unavailable",
        reason: "LeaderTransferTimeout",
      });
      // The leader abandoned the transfer and leads on.
      expect((await cluster.waitForLeader()).name).toBe(leader.name);
    } finally {
      cluster.resume(target.name);
    }
  });
});
