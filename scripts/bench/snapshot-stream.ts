/**
 * Snapshot streaming: a leader sends a state database of several GiB to a follower that is behind its
 * compacted log, through the real voter (storage, driver, peer transport over TCP on loopback). The
 * leader runs in this process, so its event loop can be watched during the send (the longest stall,
 * from `monitorEventLoopDelay` and a 1 ms timer's drift); the follower that receives the snapshot runs
 * in a process of its own, the third voter in this one. The state is made large by adding a table of
 * 1 MiB blobs to the leader's state database in one transaction while it is stopped. Every file it
 * writes is under one temporary directory, removed at the end, whatever happens.
 *
 *   pnpm --filter @keyload/scripts bench:snapshot-stream [--gib 2.5]
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { loadVoterConfig } from "../../node/src/config/voter-config.js";
import { clusterEnvs } from "../../node/src/voter/test-fixtures/cluster-envs.js";
import { killProcess, startVoterProcess } from "../../node/src/voter/test-fixtures/voter-process.js";
import { type RunningVoter, startVoter } from "../../node/src/voter/voter.js";
import { NODE_PACKAGE_DIR } from "./keyload-cluster.js";
import { scriptArgs } from "./script-args.js";

const MiB = 1024 * 1024;
/** Entries between snapshots: one snapshot is taken once the proposals below are applied. */
const SNAPSHOT_INTERVAL = 100;

/** The part of better-sqlite3 this bench uses (the driver is the node package's dependency). */
interface Sqlite {
  exec(sql: string): void;
  prepare(sql: string): { run(...params: unknown[]): unknown };
  close(): void;
}
const nodeRequire = createRequire(join(NODE_PACKAGE_DIR, "package.json"));
const Database = nodeRequire("better-sqlite3") as new (path: string) => Sqlite;
/** pino, as the voter's logger is made, writing each line to `stream`. */
const pino = nodeRequire("pino") as (
  options: { level: string; base: Record<string, string> },
  stream: { write(line: string): void },
) => RunningVoter["logger"];
/** The leader's log message once it has recorded a snapshot point. */
const SNAPSHOT_POINT_RECORDED = "snapshot point recorded and log compacted";

export interface SnapshotStreamBenchResult {
  snapshotBytes: number;
  sendSeconds: number;
  mibPerSecond: number;
  /** The leader's longest event-loop stall during the send, per monitorEventLoopDelay and per a 1 ms timer. */
  maxDelayMs: number;
  maxDriftMs: number;
  p99DelayMs: number;
  /** Stalls of the 1 ms timer over 20 ms: seconds into the send, and length in ms. */
  stalls: [number, number][];
  /** The same probes over the 10 s before the send, the cluster idle: what the machine itself adds. */
  idleMaxDelayMs: number;
  idleP99DelayMs: number;
}

const IDLE_PROBE_MS = 10_000;

async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Adds `bytes` of incompressible blobs to a stopped voter's state database, in one transaction. */
function inflateState(dataDir: string, bytes: number): number {
  const path = join(dataDir, "state", "state.sqlite");
  const db = new Database(path);
  try {
    db.exec("CREATE TABLE bench_ballast (id INTEGER PRIMARY KEY, blob BLOB NOT NULL)");
    const insert = db.prepare("INSERT INTO bench_ballast (blob) VALUES (?)");
    const blobs = Array.from({ length: 16 }, () => randomBytes(MiB));
    db.exec("BEGIN");
    for (let i = 0; i < Math.ceil(bytes / MiB); i++) insert.run(blobs[i % blobs.length]);
    db.exec("COMMIT");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  return statSync(path).size;
}

export async function runSnapshotStreamBench(stateBytes: number): Promise<SnapshotStreamBenchResult> {
  const root = mkdtempSync(join(tmpdir(), "keyload-snapshot-bench-"));
  const voters: (RunningVoter | null)[] = [null, null, null];
  let receiver: ChildProcess | null = null;
  try {
    const envs = await clusterEnvs(root, {
      env: {
        KeyLoad__Raft__SnapshotIntervalEntries: String(SNAPSHOT_INTERVAL),
        KeyLoad__Raft__ElectionTimeoutMs: "1000",
        KeyLoad__Raft__HeartbeatIntervalMs: "100",
      },
    });
    // The leader's log lines tell when it has recorded a snapshot point (and compacted its log).
    const points: number[] = [];
    const start = (i: number): Promise<RunningVoter> => {
      const config = loadVoterConfig({ env: envs[i]! });
      if (i !== 0) return startVoter(config);
      const watch = (line: string): void => {
        const event = JSON.parse(line) as { msg?: string; index?: number };
        if (event.msg === SNAPSHOT_POINT_RECORDED && event.index !== undefined) points.push(event.index);
      };
      return startVoter(config, pino({ level: "info", base: { nodeId: config.node.id } }, { write: watch }));
    };
    // A cluster that elected a leader and applied its first entries, then stopped.
    for (let i = 0; i < 3; i++) voters[i] = await start(i);
    await waitUntil("a leader", () => voters.every((v) => v?.hasBootstrapAdmin() === true), 30_000);
    for (let i = 0; i < 3; i++) {
      await voters[i]?.shutdown();
      voters[i] = null;
    }

    const dbBytes = inflateState(envs[0]!.KeyLoad__Node__DataDir!, stateBytes);
    console.log(`state database of voter1: ${(dbBytes / MiB).toFixed(0)} MiB`);
    voters[0] = await start(0);
    voters[1] = await start(1);
    const leader = voters[0];
    const leaderId = leader.driver.status().id;
    await waitUntil("a leader", () => voters.some((v) => v?.driver.isLeader()), 30_000);
    if (!leader.driver.isLeader()) {
      voters[1]!.driver.raft.transferLeadership(leaderId);
      await waitUntil("voter1 to lead", () => leader.driver.isLeader(), 30_000);
    }
    // Entries enough for one snapshot; the log behind it is compacted past voter3's last entry.
    const entry = new TextEncoder().encode("not a command: applied as a refusal");
    await leader.driver.propose(Array.from({ length: SNAPSHOT_INTERVAL * 2 }, () => entry));
    // A local snapshot is a point in the log, with no file (docs/decisions/0021-lazy-snapshots.md);
    // the leader copies its state only once voter3 asks for a snapshot, before the send starts.
    await waitUntil("the leader's snapshot point", () => points.length > 0, 600_000);
    console.log(`leader snapshot point at ${points[0]}`);
    const snapshots = join(envs[0]!.KeyLoad__Node__DataDir!, "raft", "snapshots");

    const histogram = monitorEventLoopDelay({ resolution: 1 });
    let maxDriftMs = 0;
    let last = performance.now();
    let began = last;
    const stalls: [number, number][] = [];
    const probe = setInterval(() => {
      const now = performance.now();
      const drift = now - last - 1;
      if (drift > 20) stalls.push([(now - began) / 1000, drift]);
      maxDriftMs = Math.max(maxDriftMs, drift);
      last = now;
    }, 1);
    histogram.enable();
    await sleep(IDLE_PROBE_MS);
    histogram.disable();
    const idleMaxDelayMs = histogram.max / 1e6;
    const idleP99DelayMs = histogram.percentile(99) / 1e6;
    histogram.reset();
    receiver = await startVoterProcess(envs[2]!, 60_000);
    const receiverId = leader.driver.members().find((m) => m.name === "voter3")!.id;
    const progress = () => leader.driver.status().progress[receiverId];
    await waitUntil("the snapshot transfer to start", () => progress()?.state === "snapshot", 600_000);
    const { index: snapIndex, bytes: snapshotBytes } = latestSnapshot(snapshots)!;
    console.log(`leader's copy for voter3 at ${snapIndex}: ${(snapshotBytes / MiB).toFixed(0)} MiB`);
    histogram.enable();
    maxDriftMs = 0;
    stalls.length = 0;
    last = performance.now();
    began = last;
    await waitUntil(
      "the follower to acknowledge the snapshot",
      () => (progress()?.match ?? 0) >= snapIndex,
      3_600_000,
    );
    const sendSeconds = (performance.now() - began) / 1000;
    histogram.disable();
    clearInterval(probe);
    return {
      snapshotBytes,
      sendSeconds,
      mibPerSecond: snapshotBytes / MiB / sendSeconds,
      maxDelayMs: histogram.max / 1e6,
      maxDriftMs,
      p99DelayMs: histogram.percentile(99) / 1e6,
      stalls,
      idleMaxDelayMs,
      idleP99DelayMs,
    };
  } finally {
    if (receiver !== null) await killProcess(receiver);
    for (const v of voters) await v?.shutdown().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  }
}

/** The sealed snapshot in a voter's snapshot directory (named `snap-<index>-<term>-<tag>.sqlite`). */
function latestSnapshot(dir: string): { index: number; bytes: number } | null {
  let best: { index: number; bytes: number } | null = null;
  for (const name of readdirSync(dir)) {
    const m = /^snap-(\d{20})-\d+-[0-9a-f]{8}\.sqlite$/.exec(name);
    if (m === null) continue;
    const index = Number(m[1]);
    if (best === null || index > best.index) best = { index, bytes: statSync(join(dir, name)).size };
  }
  return best;
}

export function formatSnapshotStreamBench(r: SnapshotStreamBenchResult): string {
  return [
    `snapshot stream: ${(r.snapshotBytes / MiB).toFixed(0)} MiB from leader to follower in ${r.sendSeconds.toFixed(1)} s ` +
      `(${r.mibPerSecond.toFixed(0)} MiB/s)`,
    `  leader event loop during the send: longest stall ${r.maxDelayMs.toFixed(1)} ms ` +
      `(1 ms timer drift ${r.maxDriftMs.toFixed(1)} ms), p99 delay ${r.p99DelayMs.toFixed(1)} ms`,
    `  the same, idle for ${IDLE_PROBE_MS / 1000} s before the send: longest stall ${r.idleMaxDelayMs.toFixed(1)} ms, ` +
      `p99 delay ${r.idleP99DelayMs.toFixed(1)} ms`,
    `  stalls over 20 ms (s into the send: ms): ${r.stalls.map(([at, ms]) => `${at.toFixed(1)}: ${ms.toFixed(0)}`).join(", ") || "none"}`,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    args: scriptArgs(),
    options: { gib: { type: "string", default: "2.5" } },
  });
  const gib = Number(values.gib);
  console.log(formatSnapshotStreamBench(await runSnapshotStreamBench(gib * 1024 * MiB)));
}
