/**
 * Event-loop delay and heap of each voter's main thread, sampled inside the voter once a second: `/metrics`
 * gives the delay's percentiles since the voter started, not per second, so the benchmark preloads a
 * small module (`node --import`) that keeps a `monitorEventLoopDelay` histogram and appends, once a
 * second, that second's percentiles to a file of its own. The voter's code and settings are untouched.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** The histogram's timer interval: the delay reported is the time beyond it. */
export const LOOP_RESOLUTION_MS = 10;

const DIR_VARIABLE = "OVERLOAD_LOOP_PROBE_DIR";

// Plain JavaScript: the voters run compiled code without a TypeScript loader.
const PROBE_SOURCE = `import { appendFileSync } from "node:fs";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { isMainThread } from "node:worker_threads";
const dir = process.env.${DIR_VARIABLE};
const id = process.env.KeyLoad__Node__Id ?? String(process.pid);
// Worker threads load it too (they inherit --import): only the main thread's loop and heap count.
if (dir && isMainThread) {
  const file = dir + "/" + id + ".loop.jsonl";
  const histogram = monitorEventLoopDelay({ resolution: ${LOOP_RESOLUTION_MS} });
  histogram.enable();
  const ms = (ns) => Math.max(0, ns / 1e6 - ${LOOP_RESOLUTION_MS});
  let gcMs = 0;
  let gcMax = 0;
  let liveHeap = null;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMs += entry.duration;
      gcMax = Math.max(gcMax, entry.duration);
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) liveHeap = getHeapStatistics().used_heap_size;
    }
  }).observe({ entryTypes: ["gc"] });
  setInterval(() => {
    const { heapUsed, heapTotal } = process.memoryUsage();
    const line = { t: Date.now(), p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), gcMs, gcMax, heapUsed, heapTotal, liveHeap };
    histogram.reset();
    gcMs = 0;
    gcMax = 0;
    appendFileSync(file, JSON.stringify(line) + "\\n");
  }, 1000).unref();
}
`;

export interface LoopProbe {
  /** Node flags for each voter. */
  readonly nodeFlags: readonly string[];
  /** Environment for each voter. */
  readonly env: Record<string, string>;
}

/** Writes the probe module into `dir` (where its samples go too) and says how to load it. */
export function installLoopProbe(dir: string): LoopProbe {
  const module = join(dir, "loop-probe.mjs");
  writeFileSync(module, PROBE_SOURCE);
  return { nodeFlags: ["--import", pathToFileURL(module).href], env: { [DIR_VARIABLE]: dir } };
}

/** One second of one voter's event loop, in milliseconds beyond the timer interval. */
export interface LoopSample {
  /** When the second ended (ms since the epoch). */
  readonly t: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Time in garbage-collection pauses within the second, and the longest one (ms). */
  readonly gcMs: number;
  readonly gcMax: number;
  /** The V8 heap in use at the end of the second, and the heap V8 had reserved then, in bytes. */
  readonly heapUsed: number;
  readonly heapTotal: number;
  /**
   * The heap in use just after the latest full (mark-compact) collection: what the program holds,
   * without the garbage of the moment; null before the first one.
   */
  readonly liveHeap: number | null;
}

/** The samples of `voterId` whose second ended within [fromMs, toMs]. */
export function readLoopSamples(dir: string, voterId: string, fromMs: number, toMs: number): LoopSample[] {
  const file = join(dir, `${voterId}.loop.jsonl`);
  if (!existsSync(file)) return [];
  const samples: LoopSample[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line === "") continue;
    const sample = JSON.parse(line) as LoopSample;
    // Each sample covers the second before it: keep those mostly inside the phase.
    if (sample.t > fromMs + 500 && sample.t <= toMs + 500) samples.push(sample);
  }
  return samples;
}
