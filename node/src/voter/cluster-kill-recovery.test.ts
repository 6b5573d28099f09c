import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { clusterEnvs, httpUrlOf } from "./testing/cluster-envs.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { killProcess, startVoterProcess, waitFor200 } from "./testing/voter-process.js";

const ROUNDS = 10;

let root: string | undefined;
const procs: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(procs.map((p) => killProcess(p)));
  procs.length = 0;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("three voters killed with SIGKILL at random points", () => {
  it("lose no acknowledged write, serve no stale read, apply every command once and converge", async () => {
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

    const up = [true, true, true];
    const random = new SeededRandom(20261202);
    await RegisterWorkload.around(urls, { writers: 6, readers: 2, reachable: (i) => up[i]! }, async () => {
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
    });
  }, 240_000);
});
