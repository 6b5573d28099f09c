import { partitionsUnavailable } from "@keyload/apphost/testing";
import { describe, it } from "vitest";
import { BankWorkload } from "./test-fixtures/bank-workload.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { randomFaults } from "./test-fixtures/random-faults.js";

// Without root and iptables, the rounds that cut a voter off are left out.
const noPartitions = await partitionsUnavailable();
const startCluster = clusterPerTest();

describe(`transfers between accounts while voters are killed, stopped and cut off at random${noPartitions ? ` (no cuts: ${noPartitions})` : ""}`, () => {
  it("are atomic to every reader, linearizable per account, and answered as they committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = randomFaults(cluster, 20261207, 6, { partitions: noPartitions === undefined });
    const options = { accounts: 5, transferers: 4, readers: 2, reachable: faults.reachable };
    await BankWorkload.run(cluster, options, faults.run);
  });
});
