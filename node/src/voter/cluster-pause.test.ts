import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { clusterEnvs, httpUrlOf } from "./testing/cluster-envs.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { killProcess, startVoterProcess, waitFor200 } from "./testing/voter-process.js";

const ROUNDS = 8;

let root: string | undefined;
const procs: ChildProcess[] = [];
afterEach(async () => {
  for (const p of procs) p.kill("SIGCONT");
  await Promise.all(procs.map((p) => killProcess(p)));
  procs.length = 0;
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The voter that says it leads, by its health detail; -1 when none answers so. */
async function leaderOf(urls: readonly string[]): Promise<number> {
  for (const [i, url] of urls.entries()) {
    try {
      const res = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(500) });
      const health = (await res.json()) as { detail?: { role?: string } };
      if (health.detail?.role === "leader") return i;
    } catch {
      // paused or busy: not this one
    }
  }
  return -1;
}

describe("three voters stopped (SIGSTOP) and resumed at random", () => {
  it("serve no stale read from a leader that slept through its replacement, and converge", async () => {
    root = mkdtempSync(join(tmpdir(), "keyload-cluster-pause-"));
    const envs = await clusterEnvs(root);
    const urls = envs.map(httpUrlOf);
    procs.push(...(await Promise.all(envs.map((env) => startVoterProcess(env)))));
    await Promise.all(urls.map((url) => waitFor200(`${url}/health/ready`)));
    const random = new SeededRandom(20261204);
    await RegisterWorkload.around(urls, { writers: 6, readers: 3 }, async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(300 + random.nextInt(700));
        // Half the rounds stop the leader: it wakes believing it still leads, with requests queued.
        const leader = round % 2 === 0 ? await leaderOf(urls) : -1;
        const v = leader >= 0 ? leader : random.nextInt(3);
        procs[v]!.kill("SIGSTOP");
        await sleep(500 + random.nextInt(1500));
        procs[v]!.kill("SIGCONT");
      }
    });
  }, 240_000);
});
