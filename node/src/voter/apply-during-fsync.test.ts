import { describe, expect, it, vi } from "vitest";
import type { FsyncSite } from "../fs/fsync.js";
import { waitFor } from "../http/test-fixtures/raw-http.js";
import type { RaftDriver } from "./raft-driver.js";
import { clusterPerTest, driverParts, entry } from "./test-fixtures/cluster-per-test.js";
import { call } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();

interface Applied {
  readonly index: number;
  /** Whether one of the voter's log fsyncs was running. */
  readonly duringSync: boolean;
  /** Which call of the state machine's applyBatch, counted from 0. */
  readonly batch: number;
}

/**
 * Records each entry the driver applies; every fsync is held 20 ms longer, so that an apply that
 * overlaps one cannot miss it by chance.
 */
function trace(driver: RaftDriver): Applied[] {
  const { store, stateMachine } = driverParts(driver);
  const applied: Applied[] = [];
  let batch = 0;
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
    for (const e of entries) applied.push({ index: e.index, duringSync: syncing > 0, batch });
    batch++;
    return applyBatch(entries);
  });
  return applied;
}

/** Heartbeats once a second, so that nothing but the writes' appends carries a commit index. */
const SLOW_HEARTBEATS = {
  KeyLoad__Raft__HeartbeatIntervalMs: "1000",
  KeyLoad__Raft__ElectionTimeoutMs: "2000",
};

/** Each log write's fsync site, with the last index of the entries the write carried. */
function fsyncSites(driver: RaftDriver): { last: number; site: FsyncSite }[] {
  const { store } = driverParts(driver);
  const seen: { last: number; site: FsyncSite }[] = [];
  let last = 0;
  const ready = driver.raft.ready.bind(driver.raft);
  vi.spyOn(driver.raft, "ready").mockImplementation(() => {
    const rd = ready();
    last = rd.entries[rd.entries.length - 1]?.index ?? 0;
    return rd;
  });
  const setSite = store.setFsyncSite.bind(store);
  vi.spyOn(store, "setFsyncSite").mockImplementation((site) => {
    seen.push({ last, site });
    setSite(site);
  });
  return seen;
}

/**
 * Proposes `count` single entries one after another, each as the one before commits, so that each
 * append carries the commit of the entry before it; resolves with their indexes.
 */
function chain(leader: RaftDriver, count: number): Promise<number[]> {
  const indexes: number[] = [];
  return new Promise((resolve, reject) => {
    const next = (left: number): void => {
      leader
        .propose([entry()], undefined, () => {
          if (left > 1) queueMicrotask(() => next(left - 1));
          return left > 1;
        })
        .then(([result]) => {
          indexes.push(result!.entryIndex);
          if (indexes.length === count) resolve(indexes.sort((a, b) => a - b));
        }, reject);
    };
    next(count);
  });
}

describe("a voter's apply", () => {
  it("on a follower, holds what committed back and applies it in groups during its own fsyncs", async () => {
    // Heartbeats once a second and a hold of a minute: a follower applies only during its fsyncs.
    const cluster = await startCluster({
      env: { ...SLOW_HEARTBEATS, KeyLoad__Raft__FollowerApplyHoldMs: "60000" },
    });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    await leader.propose([entry()]);
    const sites = [0, 1, 2].map((i) => fsyncSites(cluster.voter(i).driver));
    const applied = [0, 1, 2].map((i) => trace(cluster.voter(i).driver));
    const indexes = await chain(leader, 24);

    expect(sites[leaderIndex]!.every((w) => w.site === "thread-pool")).toBe(true);
    const followers = [1, 2].map((d) => (leaderIndex + d) % 3);
    const onThreadPool = followers.map((i) => {
      const appends = sites[i]!.filter((w) => indexes.includes(w.last));
      return appends.filter((w) => w.site === "thread-pool").map((w) => w.last);
    });
    for (const [f, i] of followers.entries()) {
      // Once in each 8 indexes of the 24.
      expect(onThreadPool[f]!.length).toBe(3);
      const own = applied[i]!.filter((a) => indexes.includes(a.index));
      expect(own.length).toBeGreaterThanOrEqual(8);
      expect(own.every((a) => a.duringSync)).toBe(true);
      const perBatch = new Map<number, number>();
      for (const a of own) perBatch.set(a.batch, (perBatch.get(a.batch) ?? 0) + 1);
      expect(Math.max(...perBatch.values())).toBe(8);
    }
    // Never on the same append: one follower acknowledges each at full speed.
    expect(onThreadPool[0]!.filter((last) => onThreadPool[1]!.includes(last))).toEqual([]);
  });

  it("on a follower, of what it holds back, comes after the hold when no append comes", async () => {
    const cluster = await startCluster({ env: { KeyLoad__Raft__FollowerApplyHoldMs: "50" } });
    const leaderIndex = await cluster.waitForLeader();
    const [result] = await cluster.voter(leaderIndex).driver.propose([entry()]);
    for (const d of [1, 2]) {
      const follower = cluster.voter((leaderIndex + d) % 3).driver;
      await waitFor(
        () => follower.status().applied >= result!.entryIndex,
        `a follower to apply entry ${result!.entryIndex}`,
        2_000,
      );
    }
  });

  it("on a follower, of what it holds back, comes at once for a read that needs it", async () => {
    const cluster = await startCluster({
      env: { ...SLOW_HEARTBEATS, KeyLoad__Raft__FollowerApplyHoldMs: "60000" },
    });
    const leaderIndex = await cluster.waitForLeader();
    const leader = cluster.voter(leaderIndex).driver;
    const follower = cluster.voter((leaderIndex + 1) % 3).driver;
    await leader.propose([entry()]);
    const [result] = await leader.propose([entry()]);
    await follower.readBarrier();
    expect(follower.status().applied).toBeGreaterThanOrEqual(result!.entryIndex);
  });

  it("on a follower, of a command it forwarded, comes before the command's answer", async () => {
    const cluster = await startCluster({
      env: { ...SLOW_HEARTBEATS, KeyLoad__Raft__FollowerApplyHoldMs: "60000" },
    });
    const leaderIndex = await cluster.waitForLeader();
    const url = cluster.voter((leaderIndex + 1) % 3).httpUrl;
    const principal = { principalId: "carol", tenantId: "t1", roles: ["writer", "reader"] };
    expect(
      (await call(url, "POST", "/v1/admin/principals", { body: principal, commandId: "p" })).status,
    ).toBe(201);
    const started = performance.now();
    for (let i = 0; i < 5; i++) {
      const created = await call(url, "POST", "/v1/admin/principals/carol/keys", { commandId: `k${i}` });
      expect(created.status).toBe(201);
      // Authenticated at once (no 401) on the follower that forwarded the key's creation: the key is
      // there, the document is not.
      const key = String(created.body.apiKey);
      expect((await call(url, "GET", "/v1/catalog/nothing-here", { key })).status).toBe(404);
    }
    // The leader sent its commit index ahead of each answer: no creation waited for a heartbeat
    // (each would wait up to a second for one).
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("on a follower, is waited for by a forwarded answer at most a heartbeat interval, and not past stop", async () => {
    const cluster = await startCluster({ env: SLOW_HEARTBEATS });
    const leaderIndex = await cluster.waitForLeader();
    const follower = cluster.voter((leaderIndex + 1) % 3).driver;
    // An entry no commit reaches: the wait ends with the heartbeat interval (1 s here), resolved.
    const far = follower.status().applied + 1000;
    let started = performance.now();
    await expect(follower.waitApplied(far)).resolves.toBeUndefined();
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    // Stopping answers a waiting one at once: its command's outcome is known already.
    const waiting = follower.waitApplied(far);
    started = performance.now();
    await follower.stop();
    await expect(waiting).resolves.toBeUndefined();
    expect(performance.now() - started).toBeLessThan(900);
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
