/**
 * A closed-loop write load over one undici Pool: each of C workers sends its next request as soon as
 * the previous one has answered, until the time is up. Counts 2xx answers as writes; anything else
 * (another status or a transport error) is an error, tallied by kind with the first few bodies kept.
 */
import type { Dispatcher, Pool } from "undici";
import { machineBusySeconds, totalCpuSeconds } from "./server-processes.js";

export interface WriteRequest {
  readonly method: Dispatcher.HttpMethod;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface LoadTarget {
  /** Where the requests go, for the report. */
  readonly label: string;
  readonly pool: Pool;
  /** The `seq`-th request of the process: unique across every run and target. */
  request(seq: number): WriteRequest;
  /** The server processes whose CPU is counted. */
  readonly serverPids: readonly number[];
  /**
   * Servers of another system, idle while this one is measured: their CPU is neither this target's
   * nor other load on the machine.
   */
  readonly idlePids: readonly number[];
}

export interface LoadResult {
  readonly label: string;
  readonly concurrency: number;
  readonly seconds: number;
  readonly writes: number;
  readonly writesPerSecond: number;
  /** Milliseconds, over 2xx answers. */
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Every 2xx latency in milliseconds, sorted, so runs can be combined. */
  readonly latencies: readonly number[];
  /** CPU seconds of the server processes per 1,000 writes. */
  readonly serverCpuPer1000: number;
  readonly serverCpuSeconds: number;
  /** CPU seconds of this load generator per 1,000 writes. */
  readonly clientCpuPer1000: number;
  /**
   * Cores kept busy on average by processes other than the servers (idle ones included) and this load
   * generator: other work on the machine, which makes the figures unreliable when it is more than a few
   * percent.
   */
  readonly otherCores: number;
  readonly errors: number;
  readonly errorKinds: Record<string, number>;
  readonly errorSamples: readonly string[];
}

/**
 * One counter for the whole process, not one per target: callers build a fresh target per run, and a
 * command ID seen before is answered as a duplicate without doing the write.
 */
let nextSeq = 0;

export async function runClosedLoop(
  target: LoadTarget,
  concurrency: number,
  seconds: number,
  stop?: AbortSignal,
): Promise<LoadResult> {
  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  const errorSamples: string[] = [];
  let errors = 0;
  const noteError = (kind: string, sample: string): void => {
    errors++;
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
    if (errorSamples.length < 3) errorSamples.push(`${kind}: ${sample.slice(0, 300)}`);
  };

  const cpuBefore = totalCpuSeconds(target.serverPids);
  const idleBefore = totalCpuSeconds(target.idlePids);
  const machineBefore = machineBusySeconds();
  const clientBefore = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;

  const worker = async (): Promise<void> => {
    while (performance.now() < end && !stop?.aborted) {
      const req = target.request(nextSeq++);
      const sent = performance.now();
      try {
        const response = await target.pool.request({
          method: req.method,
          path: req.path,
          headers: req.headers,
          body: req.body,
        });
        if (response.statusCode >= 200 && response.statusCode < 300) {
          await response.body.dump();
          latencies.push(performance.now() - sent);
        } else {
          noteError(`HTTP ${response.statusCode}`, await response.body.text());
        }
      } catch (err) {
        const code = (err as { code?: string }).code;
        noteError(code ?? (err instanceof Error ? err.name : "error"), String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));

  const elapsed = (performance.now() - start) / 1000;
  const serverCpuSeconds = totalCpuSeconds(target.serverPids) - cpuBefore;
  const client = process.cpuUsage(clientBefore);
  const clientCpuSeconds = (client.user + client.system) / 1e6;
  const machineSeconds = machineBusySeconds() - machineBefore;
  const idleCpuSeconds = totalCpuSeconds(target.idlePids) - idleBefore;
  latencies.sort((a, b) => a - b);
  return resultOf({
    label: target.label,
    concurrency,
    seconds: elapsed,
    latencies,
    serverCpuSeconds,
    clientCpuSeconds,
    otherCores: Math.max(0, machineSeconds - serverCpuSeconds - clientCpuSeconds - idleCpuSeconds) / elapsed,
    errors,
    errorKinds,
    errorSamples,
  });
}

interface MeasuredTotals
  extends Pick<
    LoadResult,
    | "label"
    | "concurrency"
    | "seconds"
    | "latencies"
    | "serverCpuSeconds"
    | "otherCores"
    | "errors"
    | "errorKinds"
    | "errorSamples"
  > {
  readonly clientCpuSeconds: number;
}

/** The rates and quantiles of one level from what was measured; `latencies` sorted ascending. */
function resultOf(totals: MeasuredTotals): LoadResult {
  const { latencies, seconds, serverCpuSeconds, clientCpuSeconds } = totals;
  const writes = latencies.length;
  return {
    label: totals.label,
    concurrency: totals.concurrency,
    seconds,
    writes,
    writesPerSecond: writes / seconds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies.at(-1) ?? Number.NaN,
    latencies,
    serverCpuPer1000: writes > 0 ? (serverCpuSeconds / writes) * 1000 : Number.NaN,
    serverCpuSeconds,
    clientCpuPer1000: writes > 0 ? (clientCpuSeconds / writes) * 1000 : Number.NaN,
    otherCores: totals.otherCores,
    errors: totals.errors,
    errorKinds: totals.errorKinds,
    errorSamples: totals.errorSamples,
  };
}

/** Several runs of one target at one level as if they were one: rates over their summed time and work. */
export function combineResults(runs: readonly LoadResult[]): LoadResult {
  const first = runs[0];
  if (first === undefined) throw new Error("nothing to combine");
  const sum = (f: (r: LoadResult) => number): number => runs.reduce((t, r) => t + f(r), 0);
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const errorKinds: Record<string, number> = {};
  for (const r of runs) {
    for (const [kind, n] of Object.entries(r.errorKinds)) errorKinds[kind] = (errorKinds[kind] ?? 0) + n;
  }
  return resultOf({
    label: first.label,
    concurrency: first.concurrency,
    seconds: sum((r) => r.seconds),
    latencies,
    serverCpuSeconds: sum((r) => r.serverCpuSeconds),
    clientCpuSeconds: sum((r) => (r.clientCpuPer1000 * r.writes) / 1000),
    otherCores: Math.max(...runs.map((r) => r.otherCores)),
    errors: sum((r) => r.errors),
    errorKinds,
    errorSamples: runs.flatMap((r) => r.errorSamples).slice(0, 3),
  });
}

/** The nearest-rank quantile of sorted values. */
function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}
