import { setTimeout as sleep } from "node:timers/promises";
import { describe, it } from "vitest";
import { SeededRandom } from "../raft/seeded-random.js";
import { RegisterWorkload } from "./testing/register-workload.js";
import { processClusterPerTest } from "./testing/voter-process.js";

const ROUNDS = 8;

const startCluster = processClusterPerTest();

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
    const { urls, procs } = await startCluster();
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
