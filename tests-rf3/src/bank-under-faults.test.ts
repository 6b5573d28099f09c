import { describe, it } from "vitest";
import { BankWorkload } from "./test-fixtures/bank-workload.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { FAST_RAFT } from "./test-fixtures/fast-raft.js";
import { killsAndPauses } from "./test-fixtures/kills-and-pauses.js";

const startCluster = clusterPerTest();

describe("transfers between accounts while voters are killed (SIGKILL) and stopped (SIGSTOP) at random", () => {
  it("are atomic to every reader, linearizable per account, and answered as they committed", async () => {
    const cluster = await startCluster({
      env: { ...FAST_RAFT, KeyLoad__Raft__SnapshotIntervalEntries: "200" },
    });
    const faults = killsAndPauses(cluster, 20261207, 6);
    const options = { accounts: 5, transferers: 4, readers: 2, reachable: faults.reachable };
    await BankWorkload.run(cluster, options, faults.run);
  });
});
