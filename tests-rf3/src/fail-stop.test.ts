import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { promisify } from "node:util";
import type { TestCluster, TestVoter } from "@keyload/apphost/testing";
import { describe, expect, it } from "vitest";
import { clientsPerTest } from "./test-fixtures/clients-per-test.js";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

const run = promisify(execFile);
const startCluster = clusterPerTest();
const connect = clientsPerTest();

/**
 * Why util-linux's prlimit cannot change this process's limits here, for the test to skip on, or
 * undefined when it can. Where `KEYLOAD_REQUIRE_PRLIMIT=1` (CI) its absence throws instead: there a
 * skipped fail-stop test would hide a broken setup.
 */
async function prlimitUnavailable(): Promise<string | undefined> {
  try {
    await run("prlimit", ["--pid", String(process.pid), "--fsize"]);
    return undefined;
  } catch (err) {
    const reason = `prlimit is not available: ${(err as Error).message}`;
    if (process.env.KEYLOAD_REQUIRE_PRLIMIT === "1")
      throw new Error(`KEYLOAD_REQUIRE_PRLIMIT=1, but ${reason}`);
    return reason;
  }
}
const unavailable = await prlimitUnavailable();

/** This process's soft limit on the size of the files it writes, as prlimit reads and sets it. */
async function ownFileSizeLimit(soft?: string): Promise<string> {
  const pid = String(process.pid);
  if (soft !== undefined) await run("prlimit", ["--pid", pid, `--fsize=${soft}:`]);
  const { stdout } = await run("prlimit", [
    "--pid",
    pid,
    "--fsize",
    "--raw",
    "--noheadings",
    "--output=SOFT",
  ]);
  return stdout.trim();
}

/**
 * Starts the stopped voter with a cap on the size up to which its process may write any file
 * (RLIMIT_FSIZE, which it inherits from this process when the AppHost spawns it): a write past the cap
 * fails with EFBIG (Node ignores SIGXFSZ), which SQLite reports as SQLITE_FULL. A real I/O failure of
 * the voter's log or state, whichever first writes past it. This process's own limit is back as it
 * was once the voter runs.
 */
async function startWithFileSizeCap(cluster: TestCluster, voter: TestVoter, bytes: number): Promise<void> {
  const before = await ownFileSizeLimit();
  await ownFileSizeLimit(String(bytes));
  try {
    await cluster.start(voter.name);
  } finally {
    await ownFileSizeLimit(before);
  }
}

const BODY = "x".repeat(192 * 1024);

async function allDocuments(cluster: TestCluster, endpoint: string): Promise<Map<string, number>> {
  const reader = cluster.client(cluster.adminKey);
  const docs = new Map<string, number>();
  for await (const doc of reader.queryAll({ prefix: "k/", limit: 500 }, { endpoint })) {
    docs.set(doc.key, doc.version);
  }
  return docs;
}

describe("fail-stop of a voter process", () => {
  it.skipIf(unavailable !== undefined)(
    "a follower whose writes fail exits non-zero and shows as failed with its last log lines; the others serve on; restarted, it converges",
    async () => {
      const cluster = await startCluster();
      const leader = await cluster.waitForLeader();
      const target = cluster.voters.find((v) => v.name !== leader.name)!;
      const survivors = cluster.voters.filter((v) => v.name !== target.name).map((v) => v.httpUrl);
      const writer = connect({ endpoints: survivors, apiKey: cluster.adminKey });
      for (let n = 0; n < 5; n++) await writer.put(`k/before-${n}`, { n });

      await cluster.stop(target.name);
      // Well above what its log file will hold, well below what its data files reach with the writes.
      await startWithFileSizeCap(cluster, target, statSync(target.logFile).size + 1024 * 1024);
      expect(target.state).toBe("running");
      let n = 0;
      await waitUntil(
        "the voter to exit",
        async (describe) => {
          await writer.put(`k/${n++}`, { body: BODY });
          describe({ state: target.state, written: n });
          return target.state === "failed" ? true : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 10 },
      );
      expect(target.pid).toBeNull();
      const failure = target.failure!;
      expect(failure.exit).toBe("exited with code 3");
      expect(failure.lastLines.some((line) => line.includes('"failStop":true'))).toBe(true);

      // The two others go on, without it.
      for (let m = 0; m < 10; m++) await writer.put(`k/after-${m}`, { m });

      await cluster.start(target.name);
      expect(target.state).toBe("running");
      expect(target.failure).toBeNull();
      await cluster.waitForReady();
      const expected = await allDocuments(cluster, leader.httpUrl);
      expect(expected.size).toBe(5 + n + 10);
      await waitUntil("the restarted voter to converge", async (describe) => {
        const seen = await allDocuments(cluster, target.httpUrl);
        describe({ seen: seen.size, expected: expected.size });
        return seen.size === expected.size ? seen : undefined;
      });
      expect(await allDocuments(cluster, target.httpUrl)).toEqual(expected);
    },
    120_000,
  );
});
