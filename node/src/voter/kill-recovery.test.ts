import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pickFreePorts } from "../net/free-ports.js";
import { SeededRandom } from "../raft/seeded-random.js";
import { singleVoterEnv } from "./test-fixtures/cluster-envs.js";
import { call } from "./test-fixtures/voter-cluster.js";
import { killProcess, startVoterProcess, waitFor200 } from "./test-fixtures/voter-process.js";

let dir: string | undefined;
let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A single-voter cluster as a real process, ready to take writes. */
async function startSingleVoter(dataDir: string, httpPort: number, peerPort: number): Promise<ChildProcess> {
  const proc = await startVoterProcess(
    singleVoterEnv(dataDir, httpPort, peerPort, {
      // Small intervals so snapshots and compaction happen between the kills too.
      KeyLoad__Raft__SnapshotIntervalEntries: "150",
    }),
  );
  try {
    await waitFor200(`http://127.0.0.1:${httpPort}/health/ready`);
  } catch (err) {
    // Not yet `child`, which afterEach kills: a voter that never got ready must not outlive the test.
    proc.kill("SIGKILL");
    throw err;
  }
  return proc;
}

describe("a voter killed with SIGKILL at random points", () => {
  it("keeps every acknowledged write and applies each exactly once after restart", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-kill-"));
    const [httpPort, peerPort] = (await pickFreePorts("127.0.0.1", 2)) as [number, number];
    const url = `http://127.0.0.1:${httpPort}`;
    const random = new SeededRandom(20261130);
    /** key -> the highest value acknowledged; every write increments its key's counter. */
    const acked = new Map<string, number>();
    let next = 0;
    for (let round = 0; round < 8; round++) {
      child = await startSingleVoter(join(dir, "voter1"), httpPort, peerPort);
      let stop = false;
      const writers = Array.from({ length: 8 }, async (_, w) => {
        while (!stop) {
          const n = next++;
          const key = `k${w}`;
          try {
            const r = await call(url, "PUT", `/v1/catalog/${key}`, {
              body: { value: n },
              commandId: `c${n}`,
            });
            if (r.status === 200) acked.set(key, n);
          } catch {
            // Killed mid-request: the outcome is unknown, which the check below allows.
          }
        }
      });
      await new Promise((r) => setTimeout(r, 300 + random.nextInt(700)));
      const killed = killProcess(child);
      stop = true;
      await Promise.all(writers);
      await killed;
    }
    child = await startSingleVoter(join(dir, "voter1"), httpPort, peerPort);
    expect(acked.size).toBe(8);
    for (const [key, n] of acked) {
      const doc = await call(url, "GET", `/v1/catalog/${key}`);
      expect(doc.status).toBe(200);
      // A later unacknowledged write may have committed too, never an earlier value.
      expect(doc.body.value as number).toBeGreaterThanOrEqual(n);
      const outcome = await call(url, "GET", `/v1/commands/c${n}`);
      expect(outcome.body).toMatchObject({ status: "committed" });
    }
    // Every write applied exactly once: a document's version counts the writes that committed to it,
    // each committed command ID having exactly one outcome.
    const committed = new Map<string, number>();
    for (let n = 0; n < next; n++) {
      const o = await call(url, "GET", `/v1/commands/c${n}`);
      const key = (o.body.result as { key?: string } | undefined)?.key;
      if (o.status === 200 && key) committed.set(key, (committed.get(key) ?? 0) + 1);
    }
    for (let w = 0; w < 8; w++) {
      const doc = await call(url, "GET", `/v1/catalog/k${w}`);
      expect(doc.body.version).toBe(committed.get(`k${w}`));
    }
  }, 120_000);
});
