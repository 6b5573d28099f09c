import { setTimeout as sleep } from "node:timers/promises";
import { VOTER_NAMES } from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { RegisterWorkload } from "./test-fixtures/register-workload.js";
import { SeededRandom } from "./test-fixtures/seeded-random.js";

const ROUNDS = 5;

const startCluster = clusterPerTest();

describe("three voters killed with SIGKILL at random points", () => {
  it("lose no acknowledged write, serve no stale read, apply every command once and converge", async () => {
    const cluster = await startCluster({
      env: {
        ...FAST_RAFT,
        // Snapshots, compaction and snapshot installs happen between the kills too.
        KeyLoad__Raft__SnapshotIntervalEntries: "200",
      },
    });
    const up = [true, true, true];
    const random = new SeededRandom(20261202);
    await RegisterWorkload.run(
      cluster,
      { keys: 3, writers: 6, readers: 2, reachable: (i) => up[i]! },
      async () => {
        for (let round = 0; round < ROUNDS; round++) {
          await sleep(300 + random.nextInt(900));
          // Every third round takes two voters down at once: no quorum until one is back.
          const first = random.nextInt(3);
          const victims = round % 3 === 2 ? [first, (first + 1 + random.nextInt(2)) % 3] : [first];
          for (const v of victims) up[v] = false;
          await Promise.all(victims.map((v) => cluster.kill(VOTER_NAMES[v]!)));
          await sleep(100 + random.nextInt(700));
          await Promise.all(victims.map((v) => cluster.start(VOTER_NAMES[v]!)));
          for (const v of victims) up[v] = true;
        }
      },
    );
  });
});
