import { setTimeout as sleep } from "node:timers/promises";
import { VOTER_NAMES } from "@keyload/apphost/testing";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { RegisterWorkload } from "./test-fixtures/register-workload.js";
import { SeededRandom } from "./test-fixtures/seeded-random.js";

const ROUNDS = 6;

const startCluster = clusterPerTest();

describe("three voters stopped (SIGSTOP) and resumed at random", () => {
  it("serve no stale read from a leader that slept through its replacement, and converge", async () => {
    const cluster = await startCluster({
      env: FAST_RAFT,
    });
    const random = new SeededRandom(20261204);
    const ops = cluster.client();
    const termOf = async (endpoint: string): Promise<number> =>
      Number((await ops.live({ endpoint })).detail.term);
    let replaced = 0;
    await RegisterWorkload.run(cluster, { keys: 3, writers: 6, readers: 3 }, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(700));
        // Half the rounds stop the leader: it wakes believing it still leads, with requests queued. It
        // sleeps past two election timeouts, so the others have elected a successor by then.
        const leader = round % 2 === 0 ? await cluster.leader() : undefined;
        const victim = leader?.name ?? VOTER_NAMES[random.nextInt(3)]!;
        const termBefore = leader === undefined ? 0 : await termOf(leader.httpUrl);
        cluster.pause(victim);
        try {
          await sleep(leader === undefined ? 500 + random.nextInt(1500) : 1500 + random.nextInt(1500));
        } finally {
          cluster.resume(victim);
        }
        if (leader !== undefined) {
          const next = await cluster.waitForLeader({ timeoutMs: 20_000 });
          if ((await termOf(next.httpUrl)) > termBefore) replaced++;
        }
      }
    });
    // The case the test is for happened: a leader slept through its replacement.
    expect(replaced).toBeGreaterThan(0);
  });
});
