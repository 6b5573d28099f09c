import { describe, expect, it, vi } from "vitest";
import type { RaftDriver } from "./raft-driver.js";
import { clusterPerTest, driverParts, entry, sendsAndApplies } from "./testing/cluster-per-test.js";

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

/** Records, in order, each append a follower acknowledges and each entry it applies, by index. */
const acksAndApplies = (driver: RaftDriver): string[] =>
  sendsAndApplies(driver, (m) => (m.type === "append-response" && !m.reject ? [`ack ${m.index}`] : []));

describe("a voter's apply", () => {
  it("on a follower, of what the next append says committed, waits until that append is acknowledged", async () => {
    // Heartbeats once a second: each commit reaches the followers with the next write's append.
    const cluster = await startCluster({
      env: { KeyLoad__Raft__HeartbeatIntervalMs: "1000", KeyLoad__Raft__ElectionTimeoutMs: "2000" },
    });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    await leader.propose([entry()]);
    const followers = [1, 2].map((i) => acksAndApplies(cluster.voter((leaderIndex + i) % 3).driver));
    const indexes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [result] = await leader.propose([entry()]);
      indexes.push(result!.entryIndex);
    }
    // Each of the first four committed before the next one's append, which carried the news.
    for (const events of followers) {
      for (const index of indexes.slice(0, -1)) {
        const ack = events.indexOf(`ack ${index + 1}`);
        expect(ack).toBeGreaterThanOrEqual(0);
        expect(ack).toBeLessThan(events.indexOf(`apply ${index}`));
      }
    }
  });

  it("runs a leader's log fsyncs on the thread pool, and another voter's on its event loop unless it has much to apply", async () => {
    const cluster = await startCluster();
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    // Per voter, each write's fsync site with the number of entries its Ready committed.
    const writes = [0, 1, 2].map((i) => {
      const driver = cluster.voter(i).driver;
      const { store } = driverParts(driver);
      const seen: { committed: number; site: string }[] = [];
      let committed = 0;
      const ready = driver.raft.ready.bind(driver.raft);
      vi.spyOn(driver.raft, "ready").mockImplementation(() => {
        const rd = ready();
        committed = rd.committedEntries.length;
        return rd;
      });
      const setSite = store.setFsyncSite.bind(store);
      vi.spyOn(store, "setFsyncSite").mockImplementation((site) => {
        seen.push({ committed, site });
        setSite(site);
      });
      return seen;
    });
    // Each next batch is proposed as the one before commits, so its append carries that commit.
    const chain = async (first: Uint8Array[]): Promise<void> => {
      let next: Promise<unknown> | undefined;
      await leader.propose(first, undefined, () => {
        queueMicrotask(() => {
          next = leader.propose([entry()], undefined, () => false);
        });
        return true;
      });
      await next;
    };
    await chain([entry()]);
    await chain(Array.from({ length: 16 }, entry));
    for (const [i, seen] of writes.entries()) {
      expect(seen.length).toBeGreaterThan(0);
      for (const w of seen) {
        const expected = i === leaderIndex || w.committed > 4 ? "thread-pool" : "event-loop";
        expect(w.site).toBe(expected);
      }
      if (i !== leaderIndex) {
        expect(seen.some((w) => w.site === "event-loop")).toBe(true);
        expect(seen.some((w) => w.committed >= 16 && w.site === "thread-pool")).toBe(true);
      }
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
