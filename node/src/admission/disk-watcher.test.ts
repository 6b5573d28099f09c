import { tmpdir } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { DiskFloor } from "./disk-floor.js";
import { DiskWatcher, statfsFreeBytes } from "./disk-watcher.js";

const MiB = 1024 * 1024;

let watcher: DiskWatcher | undefined;
afterEach(() => watcher?.stop());

/** A logger whose lines (level and message) the test reads. */
function recordingLogger(): { logger: pino.Logger; lines: { level: number; msg: string }[] } {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (condition()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("DiskWatcher", () => {
  it("measures at start, then on its interval, and logs each change of state", async () => {
    let free = 500 * MiB;
    let probes = 0;
    const floor = new DiskFloor({
      softFloorBytes: 0,
      marginBytes: 100 * MiB,
      hardFloorBytes: 50 * MiB,
      probeIntervalMs: 10,
    });
    const { logger, lines } = recordingLogger();
    watcher = new DiskWatcher({
      dir: "/data",
      floor,
      reserveBytes: async () => 20 * MiB,
      freeSpace: async (dir) => {
        expect(dir).toBe("/data");
        probes++;
        return free;
      },
      logger,
    });
    await watcher.start();
    expect(floor.status()).toMatchObject({ freeBytes: 500 * MiB, reserveBytes: 20 * MiB, state: "ok" });

    free = 100 * MiB;
    await until(() => floor.state === "soft", "the soft floor");
    free = 10 * MiB;
    await until(() => floor.state === "hard", "the hard floor");
    free = 500 * MiB;
    await until(() => floor.state === "ok", "space to come back");
    expect(lines.map((l) => l.msg)).toEqual([
      "free disk space is below the soft floor: data commands are refused",
      "free disk space is below the hard floor: every client write is refused",
      "free disk space is above its floors again",
    ]);

    watcher.stop();
    const stoppedAt = probes;
    await sleep(50);
    expect(probes).toBe(stoppedAt);
  });

  it("keeps the last measurement while measuring fails, and warns once", async () => {
    let failing = false;
    const floor = new DiskFloor({
      softFloorBytes: 0,
      marginBytes: 0,
      hardFloorBytes: 50 * MiB,
      probeIntervalMs: 10,
    });
    const { logger, lines } = recordingLogger();
    let failures = 0;
    watcher = new DiskWatcher({
      dir: "/data",
      floor,
      reserveBytes: async () => 0,
      freeSpace: async () => {
        if (!failing) return 10 * MiB;
        failures++;
        throw new Error("EIO");
      },
      logger,
    });
    await watcher.start();
    expect(floor.state).toBe("hard");
    failing = true;
    await until(() => failures >= 3, "three failed measurements");
    expect(floor.status()).toMatchObject({ freeBytes: 10 * MiB, state: "hard" });
    expect(lines.filter((l) => l.msg === "measuring the data directory's free space failed")).toHaveLength(1);
  });

  it("reads the free space of a real filesystem with statfs", async () => {
    expect(await statfsFreeBytes(tmpdir())).toBeGreaterThan(0);
  });
});
