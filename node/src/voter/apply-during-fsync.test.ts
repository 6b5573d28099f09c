import { describe, expect, it, vi } from "vitest";
import type { RaftDriver } from "./raft-driver.js";
import { clusterPerTest, driverParts, entry } from "./testing/cluster-per-test.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

/**
 * Records each entry the driver applies and whether one of its log fsyncs was running then; every
 * fsync is held 20 ms longer, so that an apply that overlaps one cannot miss it by chance.
 */
function trace(driver: RaftDriver): { index: number; duringSync: boolean }[] {
  const { store, stateMachine } = driverParts(driver);
  const applied: { index: number; duringSync: boolean }[] = [];
  let syncing = 0;
  const sync = store.sync.bind(store);
  vi.spyOn(store, "sync").mockImplementation(async () => {
    syncing++;
    try {
      await sync();
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      syncing--;
    }
  });
  const applyBatch = stateMachine.applyBatch.bind(stateMachine);
  vi.spyOn(stateMachine, "applyBatch").mockImplementation((entries) => {
    for (const e of entries) applied.push({ index: e.index, duringSync: syncing > 0 });
    return applyBatch(entries);
  });
  return applied;
}

describe("a voter's apply", () => {
  it("on a follower, of what the next append says committed, runs while that append's fsync does", async () => {
    // Heartbeats once a second: each commit reaches the followers with the next write's append.
    const cluster = await startCluster({
      env: { KeyLoad__Raft__HeartbeatIntervalMs: "1000", KeyLoad__Raft__ElectionTimeoutMs: "2000" },
    });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    await leader.propose([entry()]);
    const followers = [1, 2].map((i) => trace(cluster.voter((leaderIndex + i) % 3).driver));
    const indexes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [result] = await leader.propose([entry()]);
      indexes.push(result!.entryIndex);
    }
    const [last, ...earlier] = indexes.reverse();
    // Each of the four earlier writes committed before the next one's append, which carried the news.
    for (const applied of followers) {
      const overlapped = applied.filter((a) => a.duringSync && earlier.includes(a.index));
      expect(overlapped.map((a) => a.index).sort((a, b) => a - b)).toEqual(earlier.sort((a, b) => a - b));
      expect(applied.some((a) => a.index === last)).toBe(false);
    }
  });

  it("on the leader, of a committed entry, runs while the next entry's fsync does", async () => {
    const cluster = await startCluster();
    const leader = cluster.voter(await cluster.waitForLeader()).driver;
    const applied = trace(leader);
    let second: Promise<unknown> | undefined;
    const [first] = await leader.propose([entry()], undefined, () => {
      queueMicrotask(() => {
        second = leader.propose([entry()], undefined, () => false);
      });
      return true;
    });
    await second;
    // Applied while the second entry's fsync ran: neither before it started nor after it.
    expect(applied.find((a) => a.index === first!.entryIndex)?.duringSync).toBe(true);
  });
});
