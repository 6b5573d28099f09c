import { UnknownWriteOutcomeError } from "@keyload/contract";
import { describe, expect, it, vi } from "vitest";
import { clusterPerTest, driverParts, entry } from "./test-fixtures/cluster-per-test.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

describe("a membership change's deadline", () => {
  it("ends the wait for a change that cannot commit, as a proposal's does", async () => {
    const cluster = await startCluster();
    const leader = cluster.voter(await cluster.waitForLeader()).driver;
    await leader.propose([entry()]);
    // The leader's followers hear nothing more from it: the change is appended and never commits. The
    // deadline is shorter than an election timeout, after which a new leader could overwrite it.
    vi.spyOn(driverParts(leader).transport, "send").mockImplementation(() => undefined);
    const change = leader.proposeConfChange(
      { type: "add-learner", node: "voter9" },
      AbortSignal.timeout(300),
    );
    await expect(change).rejects.toBeInstanceOf(UnknownWriteOutcomeError);
    await expect(change).rejects.toMatchObject({ reason: "ReplicationDeadline" });
  });
});
