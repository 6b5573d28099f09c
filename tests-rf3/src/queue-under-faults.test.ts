import { setTimeout as sleep } from "node:timers/promises";
import { VOTER_NAMES } from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { QueueWorkload } from "./test-fixtures/queue-workload.js";
import { SeededRandom } from "./test-fixtures/seeded-random.js";

const ROUNDS = 6;

const startCluster = clusterPerTest();

describe("a work queue while voters are killed (SIGKILL) and stopped (SIGSTOP) at random", () => {
  it("acknowledges every message enqueued exactly once, never leases a message twice at a time, and answers every command as it committed", async () => {
    const cluster = await startCluster({
      env: {
        ...FAST_RAFT,
        KeyLoad__Raft__SnapshotIntervalEntries: "200",
      },
    });
    const up = [true, true, true];
    const random = new SeededRandom(20261206);
    await QueueWorkload.run(cluster, { producers: 2, consumers: 3, reachable: (i) => up[i]! }, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(900));
        // Odd rounds stop the leader: it wakes believing it still leads, with leases and acks queued.
        if (round % 2 === 1) {
          const victim = (await cluster.leader())?.name ?? VOTER_NAMES[random.nextInt(3)]!;
          cluster.pause(victim);
          try {
            await sleep(500 + random.nextInt(1500));
          } finally {
            cluster.resume(victim);
          }
          continue;
        }
        const v = random.nextInt(3);
        up[v] = false;
        await cluster.kill(VOTER_NAMES[v]!);
        await sleep(100 + random.nextInt(700));
        await cluster.start(VOTER_NAMES[v]!);
        up[v] = true;
      }
    });
  });
});
