import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { ClusterDisposedError, VOTER_NAMES, VoterStateError } from "@keyload/apphost/testing";
import { UnauthenticatedError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

const startCluster = clusterPerTest();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids among `pids` whose processes are still alive after `timeoutMs`. */
async function survivors(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const alive = pids.filter(isAlive);
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await sleep(100);
  }
}

describe("the testing API", () => {
  it("starts a ready cluster with forwarded settings, a leader, clients and tenants", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__CommandAdmission__MaxCommands: "200" },
      voterEnv: { voter2: { KeyLoad__CommandAdmission__MaxCommands: "50" } },
    });
    const leader = await cluster.waitForLeader();
    expect(VOTER_NAMES).toContain(leader.name);
    expect((await cluster.leader())?.name).toBe(leader.name);
    for (const voter of cluster.voters) {
      expect(voter.pid).toBeTypeOf("number");
      expect(voter.httpUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(existsSync(voter.dataDir)).toBe(true);
    }

    const admin = cluster.adminClient();
    const limits = await Promise.all(
      cluster.voters.map(
        async (v) => (await admin.admissionStatus({ endpoint: v.httpUrl })).commandAdmission.limits,
      ),
    );
    expect(limits.map((l) => l.maxCommands)).toEqual([200, 50, 200]);

    const tenant = await cluster.createTenant({ keys: 2 });
    expect(tenant.keys).toHaveLength(2);
    const written = await cluster.client(tenant.apiKey).put("greeting", { hello: "world" });
    expect(written.version).toBe(1);
    const read = await cluster.client(tenant.keys[1]!.apiKey).get("greeting");
    expect(read.value).toEqual({ hello: "world" });
    await expect(cluster.client().admissionStatus()).rejects.toBeInstanceOf(UnauthenticatedError);
    expect(cluster.logs("voter1")).toContain("voter started");
  });

  it("kills, restarts, pauses, wipes and replaces voters, and dispose leaves nothing behind", async () => {
    const cluster = await startCluster({
      env: FAST_RAFT,
    });
    const admin = cluster.adminClient();
    const first = await cluster.waitForLeader();
    await admin.put("before", 1);

    await cluster.kill(first.name);
    expect(cluster.voter(first.name).pid).toBeNull();
    const second = await cluster.waitForLeader({ excluding: [first.name] });
    expect(second.name).not.toBe(first.name);
    await admin.put("during", 2);
    await cluster.restart(first.name);
    await cluster.waitForReady();

    const follower = cluster.voters.find((v) => v.name !== second.name)!;
    cluster.pause(follower.name);
    try {
      // Through the leader: a paused voter accepts connections but never answers, so a client trying
      // it first would wait out its request timeout.
      await admin.put("paused", 3, { endpoint: cluster.voter(second.name).httpUrl });
      expect(cluster.voter(follower.name).pid).toBeTypeOf("number");
    } finally {
      cluster.resume(follower.name);
    }

    expect(() => cluster.wipe(follower.name)).toThrow(VoterStateError);
    await cluster.stop(follower.name);
    cluster.wipe(follower.name);
    expect(existsSync(follower.dataDir)).toBe(false);
    await cluster.start(follower.name);
    expect(existsSync(follower.dataDir)).toBe(true);
    // The wiped voter comes back as a new member, asks the leader to put it in its old member's place
    // and is promoted once caught up (rejoin-after-data-loss.test.ts): a voter again that holds
    // everything acknowledged before.
    const leaderUrl = cluster.voter(second.name).httpUrl;
    await admin.put("after", 4, { endpoint: leaderUrl });
    const rebuilt = cluster.voter(follower.name).httpUrl;
    const rejoined = await waitUntil(`${follower.name} to be a voter again`, async (seen) => {
      const { members } = await admin.clusterMembers({ endpoint: leaderUrl });
      seen(members);
      const back = members.find((m) => m.name === follower.name && m.memberId !== follower.name);
      return back?.role === "voter" && members.every((m) => m.role === "voter") ? members : undefined;
    });
    expect(rejoined.map((m) => m.role)).toEqual(["voter", "voter", "voter"]);
    expect(rejoined.find((m) => m.name === follower.name)?.memberId).toMatch(
      new RegExp(`^${follower.name}~[0-9a-f]{8}$`),
    );
    expect((await admin.get("after", { endpoint: rebuilt })).value).toBe(4);
    // Replaced, it is a voter again that holds everything acknowledged before.
    expect(await cluster.replace(follower.name)).toMatch(new RegExp(`^${follower.name} replaced: `));
    expect((await admin.get("after", { endpoint: rebuilt })).value).toBe(4);
    expect((await admin.get("before", { endpoint: rebuilt })).value).toBe(1);
    const roles = (await admin.clusterMembers()).members.map((m) => m.role);
    expect(roles).toEqual(["voter", "voter", "voter"]);

    const pids = cluster.voters.map((v) => v.pid!);
    const { stateDir } = cluster;
    await cluster.dispose();
    expect(await survivors(pids, 2_000)).toEqual([]);
    expect(existsSync(stateDir)).toBe(false);

    // A test body that outlives its timeout runs on after the afterEach dispose: every fault and
    // lifecycle method then refuses, so nothing is respawned, signalled or cut behind the cleanup.
    const name = follower.name;
    for (const call of [
      () => cluster.start(name),
      () => cluster.restart(name),
      () => cluster.kill(name),
      () => cluster.stop(name),
      () => cluster.replace(name),
      () => cluster.partition([[name]]),
      () => cluster.cut([[name, second.name]]),
      () => cluster.heal(),
      () => cluster.dashboard(),
    ]) {
      await expect(call()).rejects.toBeInstanceOf(ClusterDisposedError);
    }
    for (const call of [() => cluster.pause(name), () => cluster.resume(name), () => cluster.wipe(name)]) {
      expect(call).toThrow(ClusterDisposedError);
    }
    expect(cluster.voters.map((v) => v.pid)).toEqual([null, null, null]);
    expect(existsSync(stateDir)).toBe(false);
  });
});
