import { partitionsUnavailable } from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { FeedWorkload } from "./test-fixtures/feed-workload.js";
import { randomFaults } from "./test-fixtures/random-faults.js";

// Without root and iptables, the rounds that cut a voter off are left out.
const noPartitions = await partitionsUnavailable();
const startCluster = clusterPerTest();

describe(`a subscription while voters are killed, stopped and cut off at random${noPartitions ? ` (no cuts: ${noPartitions})` : ""}`, () => {
  it("delivers every committed put once acknowledged, in order, one delivery at a time, and answers every command as it committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = randomFaults(cluster, 20261208, 6, { partitions: noPartitions === undefined });
    await FeedWorkload.run(cluster, { writers: 2, consumers: 3, reachable: faults.reachable }, faults.run);
  });
});
