/**
 * One sample of one voter for the endurance run: its RSS (from /proc), its heap and worst event-loop
 * delay p99 since the last sample (from the loop probe it was started with), its data dir's bytes
 * (every file, recursively) and the files that make them up, grouped: the Raft log database and its
 * journal, the state database and its WAL, the search index, the snapshots.
 */
import { readdirSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { type LoopSample, readLoopSamples } from "./overload-loop-probe.js";
import { residentBytes } from "./overload-process-sampler.js";

/** Groups of data-dir files by path (relative, with `/`), first match wins; anything else is `other`. */
const FILE_GROUPS: readonly (readonly [string, RegExp])[] = [
  ["log", /^raft\/raft-log\.sqlite(-shm)?$/],
  ["logWal", /^raft\/raft-log\.sqlite-wal$/],
  ["journal", /^raft\/raft-log\.journal-\d+$/],
  ["snapshots", /^raft\/snapshots\//],
  ["state", /^state\/state\.sqlite(-shm)?$/],
  ["stateWal", /^state\/state\.sqlite-wal$/],
  ["search", /^state\/.*search/],
];
export const FILE_GROUP_NAMES: readonly string[] = [...FILE_GROUPS.map(([name]) => name), "other"];

export interface VoterSample {
  readonly voter: string;
  /** Seconds since the churn started. */
  readonly t: number;
  readonly rssBytes: number;
  /** NaN when the probe wrote nothing in the window. */
  readonly heapUsedBytes: number;
  /**
   * What the process holds: RSS less the V8 heap's reserve, plus the heap still in use after the
   * latest full collection (retainedBytes). RSS when the probe has not seen a full collection yet.
   */
  readonly retainedBytes: number;
  readonly loopP99Ms: number;
  readonly diskBytes: number;
  /** Bytes per file group (FILE_GROUP_NAMES). */
  readonly files: Readonly<Record<string, number>>;
}

export interface SampledVoter {
  readonly id: string;
  readonly pid: number;
  readonly dataDir: string;
}

/** Every file under `dir` with its size, by path relative to `dir`; files removed meanwhile are skipped. */
function fileSizes(dir: string): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    try {
      sizes.set(relative(dir, path).split(sep).join("/"), statSync(path).size);
    } catch {
      // A snapshot or WAL removed between listing and stat.
    }
  }
  return sizes;
}

/**
 * RSS less the heap V8 has reserved but holds no live objects in: V8 grows its heap in steps of
 * several MiB and collects when it chooses, so within minutes RSS steps up and down with no change in
 * what the program keeps. A leak in JavaScript shows in the heap live after a full collection, one in
 * native code (SQLite, buffers) in the rest of RSS; this counts both and neither of V8's reserve.
 */
export function retainedBytes(rssBytes: number, probe: Pick<LoopSample, "heapTotal" | "liveHeap">): number {
  if (probe.liveHeap === null || probe.liveHeap === undefined) return rssBytes;
  return rssBytes - probe.heapTotal + probe.liveHeap;
}

function groupOf(path: string): string {
  return FILE_GROUPS.find(([, pattern]) => pattern.test(path))?.[0] ?? "other";
}

/**
 * Samples `voter` at `nowMs`; `sinceMs` is the previous sample's time, the window whose loop-probe
 * seconds count.
 */
export function sampleVoter(
  voter: SampledVoter,
  loopDir: string,
  startedMs: number,
  sinceMs: number,
  nowMs: number,
): VoterSample {
  const loop = readLoopSamples(loopDir, voter.id, sinceMs, nowMs);
  const files: Record<string, number> = Object.fromEntries(FILE_GROUP_NAMES.map((name) => [name, 0]));
  let diskBytes = 0;
  for (const [path, bytes] of fileSizes(voter.dataDir)) {
    const group = groupOf(path);
    files[group] = (files[group] ?? 0) + bytes;
    diskBytes += bytes;
  }
  const rssBytes = residentBytes(voter.pid);
  const last = loop.at(-1);
  return {
    voter: voter.id,
    t: (nowMs - startedMs) / 1000,
    rssBytes,
    heapUsedBytes: last?.heapUsed ?? Number.NaN,
    retainedBytes: last === undefined ? rssBytes : retainedBytes(rssBytes, last),
    loopP99Ms: loop.length > 0 ? Math.max(...loop.map((s) => s.p99)) : Number.NaN,
    diskBytes,
    files,
  };
}
