import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { killProcess, processClusterPerTest, startVoterProcess } from "./testing/voter-process.js";

const ROUNDS = 10;

const startCluster = processClusterPerTest();

describe("three voters killed with SIGKILL at random points", () => {
  it("lose no acknowledged write, serve no stale read, apply every command once and converge", async () => {
    const { envs, urls, procs } = await startCluster({
      env: {
        // Snapshots, compaction and snapshot installs happen between the kills too.
        KeyLoad__Raft__SnapshotIntervalEntries: "200",
        KeyLoad__Raft__SnapshotSizeRatio: "0",
      },
    });
    const up = [true, true, true];
    const random = new SeededRandom(20261202);
    await RegisterWorkload.around(urls, { writers: 6, readers: 2, reachable: (i) => up[i]! }, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(900));
        // Every third round takes two voters down at once: no quorum until one is back.
        const first = random.nextInt(3);
        const victims = round % 3 === 2 ? [first, (first + 1 + random.nextInt(2)) % 3] : [first];
        for (const v of victims) up[v] = false;
        await Promise.all(victims.map((v) => killProcess(procs[v]!)));
        await sleep(100 + random.nextInt(700));
        for (const v of victims) {
          procs[v] = await startVoterProcess(envs[v]!);
          up[v] = true;
        }
      }
    });
  }, 240_000);
});
