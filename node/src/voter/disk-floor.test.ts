import { describe, expect, it, vi } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { restartWithFaults } from "./test-fixtures/storage-faults.js";
import { call, metricsText, type VoterCluster } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 30_000 });

const startCluster = clusterPerTest();
const MiB = 1024 * 1024;
const SOFT = 1000 * MiB;
const HARD = 100 * MiB;
const PLENTY = 10_000 * MiB;

async function until(condition: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const put = (url: string, key: string, commandId: string) =>
  call(url, "PUT", `/v1/catalog/${key}`, { body: { value: key }, commandId });
const dispatch = (url: string, commandId: string) =>
  call(url, "POST", "/v1/dispatch/ops", { body: { directive: "go" }, commandId });

/**
 * A cluster whose voters measure a free space the test sets (`free[i]`) every `probeIntervalMs`, against
 * floors of 1,000 MiB (soft) and 100 MiB (hard).
 */
async function clusterWithDisks(
  free: number[],
  probeIntervalMs = 20,
): Promise<{ cluster: VoterCluster; leader: number }> {
  const cluster = await startCluster({
    env: {
      KeyLoad__Disk__SoftFloorBytes: String(SOFT),
      KeyLoad__Disk__HardFloorBytes: String(HARD),
      KeyLoad__Disk__ProbeIntervalMs: String(probeIntervalMs),
    },
  });
  for (let i = 0; i < 3; i++) {
    await restartWithFaults(cluster, i, { freeSpace: async () => free[i]! });
  }
  return { cluster, leader: await cluster.waitForLeader() };
}

async function diskState(url: string): Promise<string> {
  const status = await call(url, "GET", "/v1/admin/admission");
  return (status.body.disk as { state: string }).state;
}

describe("the disk floor, through HTTP", () => {
  it("refuses data writes below the soft floor, on the leader and through a follower, while control work and reads go on", async () => {
    const free = [PLENTY, PLENTY, PLENTY];
    // Measured every 1.5 s, so a refusal advises waiting 2 s for the next measurement.
    const { cluster, leader } = await clusterWithDisks(free, 1500);
    const leaderUrl = cluster.voter(leader).httpUrl;
    const followerUrl = cluster.voter((leader + 1) % 3).httpUrl;
    expect((await put(leaderUrl, "before", "w-before")).status).toBe(200);

    free[leader] = 500 * MiB;
    await until(async () => (await diskState(leaderUrl)) === "soft", "the leader's soft floor");

    const expected = {
      code: "ResourceExhausted",
      reason: "DiskFloor",
      commandId: "w-1",
      details: {
        governor: "command",
        lane: "data",
        limit: "SoftFloorBytes",
        limitValue: SOFT,
        freeBytes: 500 * MiB,
      },
    };
    const refused = await put(leaderUrl, "k", "w-1");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(refused.body.error).toMatchObject(expected);
    // A follower forwards the write and returns the leader's refusal unchanged.
    const relayed = await put(followerUrl, "k", "w-1");
    expect(relayed.status).toBe(429);
    expect(relayed.headers.get("retry-after")).toBe("2");
    expect(relayed.body.error).toMatchObject(expected);
    // Nothing was submitted: the command ID has no outcome.
    expect((await call(leaderUrl, "GET", "/v1/commands/w-1")).status).toBe(404);

    expect((await dispatch(leaderUrl, "c-1")).status).toBe(200);
    expect((await dispatch(followerUrl, "c-2")).status).toBe(200);
    expect((await call(leaderUrl, "GET", "/v1/catalog/before")).body).toMatchObject({ value: "before" });

    const status = await call(leaderUrl, "GET", "/v1/admin/admission");
    expect(status.body.disk).toEqual({
      freeBytes: 500 * MiB,
      reserveBytes: expect.any(Number),
      softFloorBytes: SOFT,
      hardFloorBytes: HARD,
      state: "soft",
    });
    const metrics = await metricsText(leaderUrl);
    expect(metrics).toContain(`keyload_disk_free_bytes ${500 * MiB}`);
    expect(metrics).toContain(`keyload_disk_floor_bytes{floor="soft"} ${SOFT}`);
    expect(metrics).toContain(`keyload_disk_floor_bytes{floor="hard"} ${HARD}`);
    expect(metrics).toContain('keyload_command_admission_rejections_total{lane="data",reason="DiskFloor"} 2');

    // Space comes back: the same command ID is admitted and applies once.
    free[leader] = PLENTY;
    await until(async () => (await diskState(leaderUrl)) === "ok", "the leader's disk to recover");
    const admitted = await put(followerUrl, "k", "w-1");
    expect(admitted.status).toBe(200);
    expect(admitted.body).toMatchObject({ commandId: "w-1", version: 1 });
  });

  it("refuses control work too below the hard floor, and a follower refuses by its own disk", async () => {
    const free = [PLENTY, PLENTY, PLENTY];
    const { cluster, leader } = await clusterWithDisks(free);
    const leaderUrl = cluster.voter(leader).httpUrl;
    const follower = (leader + 1) % 3;
    const followerUrl = cluster.voter(follower).httpUrl;

    free[leader] = 50 * MiB;
    await until(async () => (await diskState(leaderUrl)) === "hard", "the leader's hard floor");
    const control = await dispatch(leaderUrl, "c-1");
    expect(control.status).toBe(429);
    expect(control.body.error).toMatchObject({
      reason: "DiskHardFloor",
      details: { governor: "command", lane: "control", limit: "HardFloorBytes", limitValue: HARD },
    });
    expect((await put(leaderUrl, "k", "w-1")).body.error).toMatchObject({
      reason: "DiskFloor",
      details: { lane: "data", limit: "HardFloorBytes" },
    });

    free[leader] = PLENTY;
    free[follower] = 500 * MiB;
    await until(async () => (await diskState(leaderUrl)) === "ok", "the leader's disk to recover");
    await until(async () => (await diskState(followerUrl)) === "soft", "the follower's soft floor");
    const local = await put(followerUrl, "k", "w-2");
    expect(local.status).toBe(429);
    expect(local.body.error).toMatchObject({
      reason: "DiskFloor",
      details: { lane: "data", freeBytes: 500 * MiB },
    });
    expect((await put(leaderUrl, "k", "w-2")).status).toBe(200);
    expect((await dispatch(followerUrl, "c-1")).status).toBe(200);
  });

  it("exports no free space before the first measurement, rather than a full disk", async () => {
    const cluster = await startCluster();
    await restartWithFaults(cluster, 0, {
      freeSpace: async () => {
        throw new Error("statfs failed");
      },
    });
    const metrics = await metricsText(cluster.voter(0).httpUrl);
    expect(metrics).toContain("# TYPE keyload_disk_free_bytes gauge");
    expect(metrics).not.toMatch(/^keyload_disk_free_bytes /m);
  });
});
