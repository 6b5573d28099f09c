import { describe, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { killsAndPauses } from "./test-fixtures/kills-and-pauses.js";
import { QueueWorkload } from "./test-fixtures/queue-workload.js";

const startCluster = clusterPerTest();

describe("a work queue while voters are killed (SIGKILL) and stopped (SIGSTOP) at random", () => {
  it("acknowledges every message enqueued exactly once, never leases a message twice at a time, and answers every command as it committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = killsAndPauses(cluster, 20261206, 6);
    await QueueWorkload.run(cluster, { producers: 2, consumers: 3, reachable: faults.reachable }, faults.run);
  });
});
