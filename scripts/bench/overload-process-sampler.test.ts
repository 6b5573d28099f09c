import { mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProcessSampler } from "./overload-process-sampler.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-sampler-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("ProcessSampler", () => {
  it("keeps the largest size a watched file had, after the file shrank, and 0 for a missing one", () => {
    const wal = join(dir, "state.sqlite-wal");
    writeFileSync(wal, Buffer.alloc(1 << 20));
    const sampler = new ProcessSampler([process.pid], [], [[wal, join(dir, "absent")]]);
    // A WAL cut back at a restart: the peak stays.
    truncateSync(wal, 4096);
    const [figures] = sampler.stop().processes;
    expect(figures!.peakFileBytes).toEqual([1 << 20, 0]);
    expect(figures!.peakRssBytes).toBeGreaterThan(0);
  });

  it("tells how long a main thread ran over the phase, and how long it waited for a CPU", () => {
    const sampler = new ProcessSampler([process.pid]);
    const until = performance.now() + 200;
    while (performance.now() < until);
    const { seconds, processes } = sampler.stop();
    // Busy for 200 ms of wall time: on a CPU, or runnable and waiting for one; nothing from before.
    const { runSeconds, waitSeconds } = processes[0]!.mainThread!;
    expect(runSeconds + waitSeconds).toBeGreaterThan(0.19);
    expect(runSeconds + waitSeconds).toBeLessThanOrEqual(seconds + 0.01);
    expect(runSeconds).toBeGreaterThan(0.05);
    expect(waitSeconds).toBeGreaterThanOrEqual(0);
  });
});
