import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { retainedBytes } from "./endurance-sampler.js";
import { installLoopProbe, readLoopSamples } from "./overload-loop-probe.js";

const MiB = 1024 * 1024;

describe("the loop probe", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("records the heap live after the latest full collection and the heap V8 reserved", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-loop-probe-"));
    const probe = installLoopProbe(dir);
    // Holds 40 MiB across a full collection, then drops it before the next one, each for longer
    // than the probe's second.
    const program = `
      globalThis.kept = Array.from({ length: 40 }, () => new Array(MiB / 8).fill(1.5));
      gc();
      setTimeout(() => {
        globalThis.kept = null;
        gc();
        setTimeout(() => {}, 1300);
      }, 1300);
    `.replaceAll("MiB", String(MiB));
    const started = Date.now();
    execFileSync(process.execPath, ["--expose-gc", ...probe.nodeFlags, "-e", program], {
      env: { ...process.env, ...probe.env, KeyLoad__Node__Id: "probe" },
    });
    const samples = readLoopSamples(dir, "probe", started - 1000, Date.now());
    expect(samples.length).toBeGreaterThanOrEqual(2);
    const [holding, released] = [samples[0]!, samples.at(-1)!];
    expect(holding.liveHeap).toBeGreaterThan(40 * MiB);
    expect(released.liveHeap).toBeLessThan(20 * MiB);
    expect(holding.heapTotal).toBeGreaterThanOrEqual(holding.heapUsed);
  });

  it("samples the main thread only, not the worker threads that inherit it", () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-loop-probe-"));
    const probe = installLoopProbe(dir);
    const worker = join(dir, "busy-worker.mjs");
    // Once running, the worker blocks its own loop for 1.2 s, then lives past its probe's next second.
    writeFileSync(
      worker,
      "setTimeout(() => { const end = Date.now() + 1200; while (Date.now() < end); setTimeout(() => {}, 1300); }, 100);",
    );
    const program = `new (require("node:worker_threads").Worker)(${JSON.stringify(worker)});`;
    const started = Date.now();
    execFileSync(process.execPath, [...probe.nodeFlags, "-e", program], {
      env: { ...process.env, ...probe.env, KeyLoad__Node__Id: "probe" },
    });
    const samples = readLoopSamples(dir, "probe", started - 1000, Date.now());
    expect(samples.length).toBeGreaterThanOrEqual(2);
    // The worker's block is 1,200 ms: well under that, with room for a loaded machine.
    expect(Math.max(...samples.map((s) => s.max))).toBeLessThan(900);
  });
});

describe("retainedBytes", () => {
  it("is RSS less V8's reserve: the heap it holds but the last full collection found free", () => {
    expect(retainedBytes(200 * MiB, { heapTotal: 60 * MiB, liveHeap: 25 * MiB })).toBe(165 * MiB);
  });

  it("is RSS until the probe has seen a full collection", () => {
    expect(retainedBytes(200 * MiB, { heapTotal: 60 * MiB, liveHeap: null })).toBe(200 * MiB);
  });
});
