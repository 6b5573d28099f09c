import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { FeedWorkload } from "./test-fixtures/feed-workload.js";
import { killsAndPauses } from "./test-fixtures/kills-and-pauses.js";

const startCluster = clusterPerTest();

describe("a subscription while voters are killed (SIGKILL) and stopped (SIGSTOP) at random", () => {
  it("delivers every committed put once acknowledged, in order, one delivery at a time, and answers every command as it committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = killsAndPauses(cluster, 20261208, 6);
    await FeedWorkload.run(cluster, { writers: 2, consumers: 3, reachable: faults.reachable }, faults.run);
  });
});
