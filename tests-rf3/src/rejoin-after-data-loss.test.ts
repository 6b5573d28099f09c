import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { SteadyWriteLoad } from "./test-fixtures/steady-write-load.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

/**
 * A voter that lost its data never votes with what it no longer holds. Follower B misses writes
 * acknowledged by the leader and follower A; A then loses its data dir and the leader dies. A (empty)
 * and B (stale) alone would elect B and lose every acknowledged write: instead A starts as a new member
 * that does not vote, so there is no leader until the old one returns, and then every write is there.
 */
const startCluster = clusterPerTest();
const connect = clientsPerTest();

const ELECTION_TIMEOUT_MS = 300;

describe("rejoin after data loss", () => {
  it("leaves no leader rather than lose acknowledged writes, until the old leader returns; then replaces", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__Raft__ElectionTimeoutMs: String(ELECTION_TIMEOUT_MS) },
    });
    const leader = await cluster.waitForLeader();
    const [a, b] = cluster.voters.filter((v) => v.name !== leader.name);
    const admin = cluster.adminClient();

    await cluster.stop(b!.name);
    for (let i = 0; i < 20; i++) await admin.put(`acked/${i}`, { i }, { endpoint: leader.httpUrl });

    await cluster.stop(a!.name);
    cluster.wipe(a!.name);
    await cluster.kill(leader.name);
    await cluster.start(a!.name);
    await cluster.start(b!.name);

    // Many election timeouts: B campaigns over and over, and A never grants it a vote. Watched
    // throughout, so that a leader elected and deposed between two looks cannot go unseen.
    const ops = cluster.client();
    const watchUntil = Date.now() + 20 * ELECTION_TIMEOUT_MS;
    let looks = 0;
    while (Date.now() < watchUntil) {
      for (const v of [a!, b!]) {
        const role = await ops.live({ endpoint: v.httpUrl }).then(
          (h) => h.detail.role,
          () => "unreachable",
        );
        expect(role, `${v.name} after ${looks} looks`).not.toBe("leader");
      }
      looks++;
      await sleep(50);
    }
    expect(looks).toBeGreaterThan(10);
    expect(await cluster.leader()).toBeUndefined();
    const once = cluster.client(cluster.adminKey, { maxAttempts: 1 });
    expect(await failure(once.get("acked/0", { endpoint: b!.httpUrl }))).not.toBeInstanceOf(NotFoundError);

    await cluster.start(leader.name);
    await cluster.waitForLeader({ timeoutMs: 20_000 });
    for (const endpoint of [leader.httpUrl, b!.httpUrl]) {
      for (let i = 0; i < 20; i++) expect((await admin.get(`acked/${i}`, { endpoint })).value).toEqual({ i });
    }

    // Replaced (removed, emptied, added as a learner, promoted once caught up), A holds every write and
    // counts toward commits: with B stopped, the leader and A alone acknowledge a write.
    await cluster.replace(a!.name);
    for (let i = 0; i < 20; i++) {
      expect((await admin.get(`acked/${i}`, { endpoint: a!.httpUrl })).value).toEqual({ i });
    }
    await cluster.stop(b!.name);
    await admin.put("after-replace", 1, { endpoint: (await cluster.waitForLeader()).httpUrl });
    expect((await admin.get("after-replace", { endpoint: a!.httpUrl })).value).toBe(1);
    await cluster.start(b!.name);
    await cluster.waitForReady();
  });

  it("rejoins by itself under a steady write load, holding every acknowledged write, and counts toward commits", async () => {
    const cluster = await startCluster({ env: FAST_RAFT });
    const leader = await cluster.waitForLeader();
    const [lost, other] = cluster.voters.filter((v) => v.name !== leader.name);
    const admin = cluster.adminClient();
    const writer = () =>
      connect({
        endpoints: [leader.httpUrl, other!.httpUrl],
        apiKey: cluster.adminKey,
        adaptiveThrottle: false,
        retryBudget: { capacity: 100 },
      });
    const load = new SteadyWriteLoad([writer(), writer(), writer()], "rejoin");
    try {
      await expect.poll(() => load.acked.length, { timeout: 10_000 }).toBeGreaterThan(30);
      await cluster.stop(lost!.name);
      cluster.wipe(lost!.name);
      await cluster.start(lost!.name);
      // Nobody runs `replace`: the new member asks the leader to put it in the old one's place.
      await waitUntil(
        `${lost!.name} to be a voter again`,
        async (seen) => {
          const { members } = await admin.clusterMembers({
            endpoint: (await cluster.waitForLeader()).httpUrl,
          });
          seen(members);
          const back = members.find((m) => m.name === lost!.name);
          return back !== undefined && back.memberId !== lost!.name && back.role === "voter"
            ? back
            : undefined;
        },
        { timeoutMs: 30_000 },
      );
      const since = Date.now();
      await expect.poll(() => load.ackedSince(since), { timeout: 10_000 }).toBeGreaterThan(30);
    } finally {
      await load.stop();
    }

    // A voter again, it counts: with the other follower gone, the leader and it commit alone.
    await cluster.stop(other!.name);
    const now = await cluster.waitForLeader();
    await admin.put("after-rejoin", 1, { endpoint: now.httpUrl });
    const read = cluster.client(cluster.adminKey);
    const held = new Map<string, unknown>();
    for await (const doc of read.queryAll({ prefix: "rejoin/", limit: 500 }, { endpoint: lost!.httpUrl })) {
      held.set(doc.key, doc.value);
    }
    for (const write of load.acked) expect(held.get(write.key), write.key).toEqual(write.value);
    expect((await admin.get("after-rejoin", { endpoint: lost!.httpUrl })).value).toBe(1);
    await cluster.start(other!.name);
    await cluster.waitForReady();
  });
});
