import type { TestCluster } from "@keyload/apphost/testing";
import { type KeyLoadClient, NotFoundError, ResourceExhaustedError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";

/**
 * The disk floor on three voter processes measuring their real data dirs: a floor above any disk's
 * free space (1 PiB) stands for a full disk. Below the soft floor data writes are refused with
 * `DiskFloor` before their command ID is taken and control work commits; below the hard floor control
 * work is refused too, as `DiskHardFloor`. Reads go on.
 */
const PiB = 2 ** 50;

const startCluster = clusterPerTest();

function adminOf(cluster: TestCluster): KeyLoadClient {
  return cluster.client(cluster.adminKey, {
    maxAttempts: 1,
    retryResourceExhausted: false,
    adaptiveThrottle: false,
  });
}

async function refusal(write: Promise<unknown>): Promise<ResourceExhaustedError> {
  const error = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ResourceExhaustedError);
  return error as ResourceExhaustedError;
}

describe("the disk floor", () => {
  it("below the soft floor refuses data writes with DiskFloor and commits control work", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__Disk__SoftFloorBytes: String(PiB) },
      voterEnv: {
        voter1: { KeyLoad__Disk__MarginBytes: "1" },
        voter2: { KeyLoad__Disk__ProbeIntervalMs: "500" },
        voter3: { KeyLoad__Storage__StateCacheBytes: String(32 * 1024 * 1024) },
      },
    });
    const admin = adminOf(cluster);
    const refused = await refusal(admin.put("disk/1", { n: 1 }, { commandId: "disk-1" }));
    expect([refused.status, refused.reason, refused.governor, refused.lane]).toEqual([
      429,
      "DiskFloor",
      "command",
      "data",
    ]);
    expect(refused.details).toMatchObject({ limit: "SoftFloorBytes", limitValue: PiB });
    await expect(admin.getCommand("disk-1")).rejects.toBeInstanceOf(NotFoundError);

    expect(await admin.dispatch("ops", "go", undefined, { commandId: "ctl-1" })).toMatchObject({
      commandId: "ctl-1",
    });
    await expect(admin.get("disk/1")).rejects.toBeInstanceOf(NotFoundError);

    for (const voter of cluster.voters) {
      const status = await admin.admissionStatus({ endpoint: voter.httpUrl });
      expect(status.disk).toMatchObject({ softFloorBytes: PiB, state: "soft" });
      expect(status.disk.freeBytes).toBeGreaterThan(0);
      expect(status.storageLimits.state.cacheBytes).toBe(
        voter.name === "voter3" ? 32 * 1024 * 1024 : 64 * 1024 * 1024,
      );
    }
  });

  it("below the hard floor refuses control work too, and reads go on", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__Disk__HardFloorBytes: String(PiB) },
      voterEnv: {
        voter1: { KeyLoad__Disk__MarginBytes: "1" },
        voter2: { KeyLoad__Disk__ProbeIntervalMs: "500" },
        voter3: { KeyLoad__Storage__LogCacheBytes: String(8 * 1024 * 1024) },
      },
    });
    const admin = adminOf(cluster);
    const control = await refusal(admin.dispatch("ops", "go", undefined, { commandId: "ctl-1" }));
    // DiskFloor is the data lane's (contract section 8): control work has a reason of its own here.
    expect([control.reason, control.lane]).toEqual(["DiskHardFloor", "control"]);
    expect(control.details).toMatchObject({ limit: "HardFloorBytes", limitValue: PiB });
    const data = await refusal(admin.put("disk/1", { n: 1 }));
    expect([data.reason, data.lane]).toEqual(["DiskFloor", "data"]);
    // Below both floors, a data refusal names the one it is furthest under.
    expect(data.details).toMatchObject({ limit: "HardFloorBytes", limitValue: PiB });
    expect(await admin.readDispatch("ops")).toMatchObject({ directives: [] });
  });
});
