/**
 * Durable Raft log append throughput: 1 KiB entries written through DurableLogWriter in batches of 1,
 * 16 and 256 (one Ready each, awaited in turn, as the driver persists them), plus 64 concurrent
 * single-entry writers to show group commit; with the WAL fsync on the event loop (the default) and
 * on the thread pool. Alongside each run, in alternating slices, this disk's raw sync rate (a 512-byte
 * write plus fsync, and plus fdatasync, of one small file in a loop) is measured in the same process:
 * the physical limit of batch 1 (the store fdatasyncs its WAL, so the faster of the two is the
 * reference). Also reports how long the event loop was held: fsync and commit times, and its lag.
 *
 *   pnpm --filter @keyload/scripts exec tsx --conditions=source bench/log-append.ts [--seconds S] [--size BYTES] [--dir PATH]
 */
import { closeSync, fdatasyncSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { Entry } from "@keyload/node/raft";
import { DurableLogStore, DurableLogWriter } from "@keyload/node/storage";
import { scriptArgs } from "./script-args.js";

export interface RawSyncRate {
  fsyncPerSecond: number;
  fdatasyncPerSecond: number;
}

type FsyncMode = "thread-pool" | "event-loop";

export interface LogAppendResult {
  label: string;
  fsync: FsyncMode;
  batch: number;
  writers: number;
  /** The disk's raw rates, measured in slices alternating with this run's. */
  raw: RawSyncRate;
  entries: number;
  batches: number;
  fsyncs: number;
  seconds: number;
  entriesPerSecond: number;
  batchesPerSecond: number;
  fsyncsPerSecond: number;
  /** Milliseconds. */
  syncP50: number;
  syncP99: number;
  commitP50: number;
  commitP99: number;
  commitMax: number;
  loopLagP99: number;
  loopLagMax: number;
}

export interface LogAppendBench {
  entryBytes: number;
  runs: LogAppendResult[];
}

/** A 512-byte write at the start of one file and a sync, in a loop for `millis`: how many were done. */
function rawSyncs(dir: string, millis: number, sync: (fd: number) => void): number {
  const path = join(dir, "raw-sync.bin");
  const fd = openSync(path, "w");
  const buf = Buffer.alloc(512, 1);
  let syncs = 0;
  const end = performance.now() + millis;
  try {
    while (performance.now() < end) {
      writeSync(fd, buf, 0, buf.length, 0);
      sync(fd);
      syncs++;
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return syncs;
}

/**
 * How late a 1 ms interval fires, in microseconds: the event loop's lag. Sampled only while the
 * appends run (the raw sync loop in between blocks the event loop by design).
 */
class LoopLag {
  readonly micros: RecordableHistogram = createHistogram();
  private timer: NodeJS.Timeout | null = null;
  private last = 0;

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      this.micros.record(Math.max(1, Math.round((now - this.last - 1) * 1000)));
      this.last = now;
    }, 1);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

/** Length of the alternating slices of raw syncs and log appends (see runLogAppend). */
const SLICE_MS = 250;

/**
 * `writers` concurrent loops each persisting batches of `batch` entries, for about `seconds` in all.
 * The disk's raw sync rate is measured in slices alternating with the appends, so both see the same
 * disk: a virtual disk's sync rate can change by a factor of two from one second to the next.
 */
export async function runLogAppend(
  dir: string,
  label: string,
  batch: number,
  writers: number,
  seconds: number,
  entryBytes: number,
  fsync: FsyncMode,
): Promise<LogAppendResult> {
  const storeDir = mkdtempSync(join(dir, "log-"));
  const writer = new DurableLogWriter(
    DurableLogStore.open(storeDir, { conf: { voters: ["n1", "n2", "n3"] }, fsync }),
  );
  const payload = new Uint8Array(entryBytes).fill(7);
  const lag = new LoopLag();
  let next = 1;
  let batches = 0;
  let deadline = 0;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const entries: Entry[] = [];
      for (let i = 0; i < batch; i++) entries.push({ index: next++, term: 1, type: "normal", data: payload });
      await writer.write({ snapshot: null, entries, hardState: { term: 1, vote: "n1", commit: next - 1 } });
      batches++;
    }
  };
  let appendMillis = 0;
  let fsyncs = 0;
  let fdatasyncs = 0;
  let rawMillis = 0;
  try {
    for (let slices = Math.max(1, Math.round((seconds * 1000) / SLICE_MS)); slices > 0; slices--) {
      fsyncs += rawSyncs(dir, SLICE_MS / 2, fsyncSync);
      fdatasyncs += rawSyncs(dir, SLICE_MS / 2, fdatasyncSync);
      rawMillis += SLICE_MS / 2;
      lag.start();
      const started = performance.now();
      deadline = started + SLICE_MS;
      await Promise.all(Array.from({ length: writers }, loop));
      appendMillis += performance.now() - started;
      lag.stop();
    }
    const took = appendMillis / 1000;
    const { syncs, syncMicros, commitMicros } = writer.store.stats;
    const entries = batches * batch;
    return {
      label,
      fsync,
      batch,
      writers,
      raw: {
        fsyncPerSecond: fsyncs / (rawMillis / 1000),
        fdatasyncPerSecond: fdatasyncs / (rawMillis / 1000),
      },
      entries,
      batches,
      fsyncs: syncs,
      seconds: took,
      entriesPerSecond: entries / took,
      batchesPerSecond: batches / took,
      fsyncsPerSecond: syncs / took,
      syncP50: syncMicros.percentile(50) / 1000,
      syncP99: syncMicros.percentile(99) / 1000,
      commitP50: commitMicros.percentile(50) / 1000,
      commitP99: commitMicros.percentile(99) / 1000,
      commitMax: commitMicros.max / 1000,
      loopLagP99: lag.micros.percentile(99) / 1000,
      loopLagMax: lag.micros.max / 1000,
    };
  } finally {
    await writer.close();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

export async function runLogAppendBench(
  seconds: number,
  entryBytes: number,
  baseDir?: string,
): Promise<LogAppendBench> {
  const dir = mkdtempSync(join(baseDir ?? tmpdir(), "keyload-bench-log-"));
  try {
    const runs: LogAppendResult[] = [];
    for (const fsync of ["event-loop", "thread-pool"] as const) {
      for (const batch of [1, 16, 256]) {
        runs.push(await runLogAppend(dir, `batch ${batch}`, batch, 1, seconds, entryBytes, fsync));
      }
      runs.push(
        await runLogAppend(dir, "batch 1 x 64 concurrent writers", 1, 64, seconds, entryBytes, fsync),
      );
    }
    return { entryBytes, runs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (x: number): string => x.toFixed(2);

export function formatLogAppendBench(b: LogAppendBench): string {
  const lines = [
    `log-append: ${b.entryBytes} B entries through DurableLogWriter (one WAL fdatasync per group commit)`,
  ];
  for (const r of b.runs) {
    const limit = Math.max(r.raw.fsyncPerSecond, r.raw.fdatasyncPerSecond);
    let verdict: string;
    if (r.batch === 1 && r.writers === 1) {
      verdict = `${(r.batchesPerSecond / limit).toFixed(2)} of the raw sync rate (target >= 0.60)`;
    } else if (r.batch === 256) {
      verdict = `${(r.entriesPerSecond / 50_000).toFixed(2)} of the 50000 entries/s target`;
    } else {
      verdict = `${(r.fsyncsPerSecond / limit).toFixed(2)} of the raw sync rate in fsyncs`;
    }
    lines.push(
      `  ${r.label}, fsync on the ${r.fsync}: ${Math.round(r.entriesPerSecond)} entries/s, ${Math.round(r.batchesPerSecond)} batches/s, ` +
        `${Math.round(r.fsyncsPerSecond)} fsyncs/s; ${verdict}`,
      `    raw disk alongside: ${Math.round(r.raw.fsyncPerSecond)} fsync/s, ${Math.round(r.raw.fdatasyncPerSecond)} fdatasync/s`,
      `    WAL fdatasync p50 ${ms(r.syncP50)} ms, p99 ${ms(r.syncP99)} ms; commit (event loop held) p50 ` +
        `${ms(r.commitP50)} ms, p99 ${ms(r.commitP99)} ms, max ${ms(r.commitMax)} ms; ` +
        `event-loop lag p99 ${ms(r.loopLagP99)} ms, max ${ms(r.loopLagMax)} ms`,
    );
  }
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: {
      seconds: { type: "string", default: "3" },
      size: { type: "string", default: "1024" },
      dir: { type: "string" },
    },
  });
  console.log(
    formatLogAppendBench(await runLogAppendBench(Number(values.seconds), Number(values.size), values.dir)),
  );
}
