import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";

/**
 * A voter that lost its data never votes with what it no longer holds. Follower B misses writes
 * acknowledged by the leader and follower A; A then loses its data dir and the leader dies. A (empty)
 * and B (stale) alone would elect B and lose every acknowledged write: instead A starts as a new member
 * that does not vote, so there is no leader until the old one returns, and then every write is there.
 */
const startCluster = clusterPerTest();

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
});
