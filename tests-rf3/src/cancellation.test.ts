import type { CommandOutcome, KeyLoadClient } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { waitForDataCommands } from "./test-fixtures/metric-wait.js";
import { PausedLeader } from "./test-fixtures/paused-leader.js";
import { RawRequest } from "./test-fixtures/raw-request.js";
import { sawHangUp } from "./test-fixtures/request-log.js";
import { metricOf } from "./test-fixtures/voter-metrics.js";
import { errorLine, waitUntil } from "./test-fixtures/wait-until.js";

const startCluster = clusterPerTest();

const HOLD_SETTINGS = {
  // Long enough that replication is still held when the held writes arrive.
  KeyLoad__Raft__ElectionTimeoutMs: "2000",
  // The held writes wait for as long as the test holds replication, not for a deadline.
  KeyLoad__Raft__ReplicationDeadlineMs: "60000",
};

/**
 * The committed outcome of `commandId`, read (never resubmitted) until one is committed: a write whose
 * client hung up commits, if it does, with nobody sending it again.
 */
function committedOutcome(client: KeyLoadClient, commandId: string): Promise<CommandOutcome> {
  return waitUntil(
    `command ${commandId} to commit`,
    async (seen) => {
      try {
        return await client.getCommand(commandId);
      } catch (error) {
        // NotFound while it is not committed; Unavailable while no quorum answers.
        seen(errorLine(error));
        return undefined;
      }
    },
    { timeoutMs: 60_000 },
  );
}

describe("cancellation", () => {
  it("a write whose client hangs up while its leader cannot commit keeps its reservation, and still commits", async () => {
    const cluster = await startCluster({
      env: HOLD_SETTINGS,
      voterEnv: { voter3: { KeyLoad__CommandAdmission__MaxCommands: "32" } },
    });
    const leader = await cluster.waitForLeader();
    const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-ops" });
    const writer = cluster.client(tenant.apiKey, { maxAttempts: 1, adaptiveThrottle: false });
    // Reads the leader's /metrics, which takes a key but no quorum.
    const operator = cluster.client(cluster.adminKey);
    const followers = cluster.voters.filter((v) => v.name !== leader.name);
    const dataLane = (field: "commands" | "active") =>
      metricOf(operator, leader.httpUrl, `keyload_command_admission_${field}`, { lane: "data" });

    // The leader appends but cannot commit: both followers are stopped (their sockets still take what
    // the leader sends, so they have the entry once they run again).
    for (const follower of followers) cluster.pause(follower.name);
    try {
      const hangUp = new AbortController();
      const write = writer.put(
        "acme/hung-up",
        { n: 1 },
        { endpoint: leader.httpUrl, commandId: "hung-up-1", signal: hangUp.signal },
      );
      write.catch(() => undefined);
      await waitForDataCommands(operator, leader.httpUrl, 1);
      hangUp.abort();
      await expect(write).rejects.toMatchObject({ name: "ConnectionError", reason: "Aborted" });
      await waitUntil("the leader to see the client hang up", async () =>
        sawHangUp(cluster, leader.name, "hung-up-1") ? true : undefined,
      );
      // No quorum answers the admission status now; `/metrics` shows the reservation still held.
      expect(await dataLane("commands")).toBe(1);
      expect(await dataLane("active")).toBe(1);
    } finally {
      for (const follower of followers) cluster.resume(follower.name);
    }

    // Nobody sends it again, yet it commits once: the hang-up did not cancel it.
    const reader = cluster.client(tenant.apiKey, { adaptiveThrottle: false });
    expect(await committedOutcome(reader, "hung-up-1")).toMatchObject({
      status: "committed",
      result: { key: "acme/hung-up", version: 1 },
    });
    expect(await reader.get("acme/hung-up")).toEqual({ key: "acme/hung-up", value: { n: 1 }, version: 1 });
    // Its reservation goes with its outcome.
    await waitForDataCommands(operator, leader.httpUrl, 0);
  });

  it("writes whose clients hang up, one forwarded by a follower and one queued behind it, stay counted in the admission status until forwarding ends, and the queued one commits", async () => {
    const cluster = await startCluster({
      env: HOLD_SETTINGS,
      voterEnv: { voter1: { KeyLoad__CommandAdmission__MaxCommandsPerPrincipal: "16" } },
    });
    const tenant = await cluster.createTenant({ tenantId: "acme", principalId: "acme-ops" });
    const writer = cluster.client(tenant.apiKey, { maxAttempts: 1, adaptiveThrottle: false });
    const admin = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });

    const hold = await PausedLeader.pause(cluster);
    const follower = hold.follower;
    try {
      // The first write, from a raw connection, is admitted by the follower and forwarded to the
      // paused leader, where it waits; the second, from the client, queues behind it.
      const body = JSON.stringify({ value: { n: 1 } });
      const forwarded = RawRequest.send(follower.httpUrl, {
        method: "PUT",
        path: `/v1/catalog/${encodeURIComponent("acme/forwarded")}`,
        headers: {
          authorization: `Bearer ${tenant.apiKey}`,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "keyload-command-id": "forwarded-1",
        },
      });
      await forwarded.write(body);
      await waitForDataCommands(admin, follower.httpUrl, 1);
      const hangUp = new AbortController();
      const queued = writer.put(
        "acme/queued",
        { n: 2 },
        { endpoint: follower.httpUrl, commandId: "queued-2", signal: hangUp.signal },
      );
      queued.catch(() => undefined);
      await waitForDataCommands(admin, follower.httpUrl, 2);

      // Both clients hang up: the raw connection closes, the client's call is aborted.
      forwarded.close();
      hangUp.abort();
      await expect(queued).rejects.toMatchObject({ name: "ConnectionError", reason: "Aborted" });
      await waitUntil("the follower to see both clients hang up", async () =>
        sawHangUp(cluster, follower.name, "forwarded-1") && sawHangUp(cluster, follower.name, "queued-2")
          ? true
          : undefined,
      );

      // Once the two followers have a leader of their own, the status (a quorum read) shows both
      // reservations held: the forwarded one active, the other queued behind it.
      const status = await hold.followerStatus(admin);
      expect(status.commandAdmission.data).toMatchObject({ commands: 2, active: 1, queued: 1 });
      expect(status.commandAdmission.verifiedScopes).toEqual([
        { lane: "data", tenantId: "acme", principalId: "acme-ops", tenantCommands: 2, principalCommands: 2 },
      ]);
    } finally {
      hold.resume();
    }

    // The resumed leader learns the new term and fails the forward; only then is the queued write
    // taken, and it commits with nobody sending it again.
    const reader = cluster.client(tenant.apiKey, { adaptiveThrottle: false });
    expect(await committedOutcome(reader, "queued-2")).toMatchObject({
      status: "committed",
      result: { key: "acme/queued", version: 1 },
    });
    expect(await reader.get("acme/queued")).toEqual({ key: "acme/queued", value: { n: 2 }, version: 1 });
    await waitForDataCommands(admin, follower.httpUrl, 0);
    // The forwarded write's outcome was left unknown; resubmitted under its ID, it applies once.
    const resolved = await reader.resolveOutcome("forwarded-1", (o) =>
      reader.put("acme/forwarded", { n: 1 }, o),
    );
    expect(resolved).toMatchObject({ commandId: "forwarded-1", key: "acme/forwarded", version: 1 });
    expect(await reader.get("acme/forwarded")).toEqual({
      key: "acme/forwarded",
      value: { n: 1 },
      version: 1,
    });
  });
});
