import { partitionsUnavailable } from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { QueueWorkload } from "./test-fixtures/queue-workload.js";
import { randomFaults } from "./test-fixtures/random-faults.js";

// Without root and iptables, the rounds that cut a voter off are left out.
const noPartitions = await partitionsUnavailable();
const startCluster = clusterPerTest();

describe(`a work queue while voters are killed, stopped and cut off at random${noPartitions ? ` (no cuts: ${noPartitions})` : ""}`, () => {
  it("acknowledges every message enqueued exactly once, never leases a message twice at a time, and answers every command as it committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = randomFaults(cluster, 20261206, 6, { partitions: noPartitions === undefined });
    await QueueWorkload.run(cluster, { producers: 2, consumers: 3, reachable: faults.reachable }, faults.run);
  });
});
