import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { clusterEnvs, httpUrlOf } from "./testing/cluster-envs.js";
import { call, type HttpAnswer } from "./testing/voter-cluster.js";
import { killProcess, startVoterProcess, waitFor200 } from "./testing/voter-process.js";

const WRITERS = 6;
const ROUNDS = 10;
const MAX_ATTEMPTS = 5;
/** Admission refused, no leader or quorum, outcome unknown: what a fault may answer a write. */
const TRANSIENT = [429, 503, 504];

let root: string | undefined;
const procs: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(procs.map((p) => killProcess(p)));
  procs.length = 0;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` over `items` with at most `limit` in flight, results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

describe("three voters killed with SIGKILL at random points", () => {
  it("lose no acknowledged write, apply every command once and end with the same documents", async () => {
    root = mkdtempSync(join(tmpdir(), "keyload-cluster-kill-"));
    const envs = await clusterEnvs(root, {
      env: {
        // Snapshots, compaction and snapshot installs happen between the kills too.
        KeyLoad__Raft__SnapshotIntervalEntries: "200",
        KeyLoad__Raft__SnapshotSizeRatio: "0",
      },
    });
    const urls = envs.map(httpUrlOf);
    procs.push(...(await Promise.all(envs.map((env) => startVoterProcess(env)))));
    await Promise.all(urls.map((url) => waitFor200(`${url}/health/ready`)));

    const random = new SeededRandom(20261202);
    const up = [true, true, true];
    /** key -> the highest value acknowledged, and the version that write answered with. */
    const acked = new Map<string, { value: number; version: number }>();
    let next = 0;
    let stop = false;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      const key = `k${w}`;
      // Each writer has its own sequence of voters, so writes go to leader and followers alike.
      const pick = new SeededRandom(w + 1);
      while (!stop) {
        const n = next++;
        // An unknown outcome is retried with the same command ID, as the contract tells clients to,
        // through whichever voter comes next: a command must still apply once.
        for (let attempt = 0; attempt < MAX_ATTEMPTS && !stop; ) {
          const target = pick.nextInt(3);
          if (!up[target]) {
            await sleep(5);
            continue;
          }
          attempt++;
          let r: HttpAnswer;
          try {
            r = await call(urls[target]!, "PUT", `/v1/catalog/${key}`, {
              body: { value: n },
              commandId: `c${n}`,
            });
          } catch {
            // The voter died under the request: the outcome is unknown.
            await sleep(20);
            continue;
          }
          if (r.status === 200) {
            const version = r.body.version as number;
            const before = acked.get(key);
            // One writer per key, one write at a time: each acknowledged write lands above the last.
            expect(version).toBeGreaterThan(before?.version ?? 0);
            acked.set(key, { value: n, version });
            break;
          }
          // Faults may only ever cost a write its answer, never give a wrong one.
          expect(TRANSIENT).toContain(r.status);
          await sleep(20);
        }
      }
    });

    for (let round = 0; round < ROUNDS; round++) {
      await sleep(300 + random.nextInt(900));
      // Every third round takes two voters down at once: no quorum until one is back.
      const first = random.nextInt(3);
      const victims = round % 3 === 2 ? [first, (first + 1 + random.nextInt(2)) % 3] : [first];
      for (const v of victims) up[v] = false;
      await Promise.all(victims.map((v) => killProcess(procs[v]!)));
      await sleep(100 + random.nextInt(700));
      for (const v of victims) {
        procs[v] = await startVoterProcess(envs[v]!);
        up[v] = true;
      }
    }
    stop = true;
    await Promise.all(writers);
    await Promise.all(urls.map((url) => waitFor200(`${url}/health/ready`)));

    expect(acked.size).toBe(WRITERS);
    // Every command's outcome, read through one voter: each acknowledged one committed, and a
    // document's version counts the commands that committed to it (none applied twice).
    const ids = Array.from({ length: next }, (_, n) => n);
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const outcomes = await mapLimit(ids, 6, (n) => call(urls[0]!, "GET", `/v1/commands/c${n}`));
    const committed = new Map<string, number>();
    for (const o of outcomes) {
      // Committed, or never committed: no other answer once the cluster is whole.
      expect([200, 404]).toContain(o.status);
      const key = (o.body.result as { key?: string } | undefined)?.key;
      if (o.status === 200 && o.body.status === "committed" && key) {
        committed.set(key, (committed.get(key) ?? 0) + 1);
      }
    }
    for (const [key, { value }] of acked) {
      expect(outcomes[value]!.body).toMatchObject({ status: "committed" });
      const docs = await Promise.all(urls.map((url) => call(url, "GET", `/v1/catalog/${key}`)));
      for (const doc of docs) {
        expect(doc.status).toBe(200);
        // A later unacknowledged write may have committed too, never an earlier value.
        expect(doc.body.value as number).toBeGreaterThanOrEqual(value);
        expect(doc.body).toEqual(docs[0]!.body);
      }
      expect(docs[0]!.body.version).toBe(committed.get(key));
    }
  }, 240_000);
});
