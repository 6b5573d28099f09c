import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClusterStatus } from "./cluster-status.js";
import { runCli, survivors } from "./test-fixtures/cli-process.js";
import { partitionsUnavailable } from "./testing/network-partition.js";

// Partitions need root and iptables; elsewhere this is skipped, and says why.
const unavailable = await partitionsUnavailable();

let dir: string;
let stateDir: string;
let pids: number[] = [];

async function status(): Promise<ClusterStatus> {
  const result = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ClusterStatus;
}

/** The rules of this cluster's chain, which the CLI names after its state dir. */
function chainRules(): string[] {
  const chain = `KLAS-${createHash("sha256").update(stateDir).digest("hex").slice(0, 16)}`;
  const all = execFileSync("iptables", ["-w", "-S"], { encoding: "utf8" }).split("\n");
  return all.filter((line) => line.includes(chain));
}

async function waitFor(
  what: string,
  check: (s: ClusterStatus) => boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check(await status())) {
    if (Date.now() >= deadline)
      throw new Error(`timed out waiting until ${what}: ${JSON.stringify(await status())}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const leaderAmong = (s: ClusterStatus, names: readonly string[]): boolean =>
  s.voters.some((v) => names.includes(v.name) && v.role === "leader" && v.health === "ready");

describe.skipIf(unavailable !== undefined)(
  `partition and heal on a cluster of the command line${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "keyload-cli-partition-"));
      stateDir = join(dir, "state");
      const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir], {
        KeyLoad__Raft__ElectionTimeoutMs: "500",
        KeyLoad__Raft__HeartbeatIntervalMs: "50",
      });
      expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
      pids = (await status()).voters.flatMap((v) => (v.pid === null ? [] : [v.pid]));
    });

    afterAll(async () => {
      // Whatever the test did, no voter and no rule may outlive it.
      await runCli(["heal", "--state-dir", stateDir]);
      await runCli(["down", "--state-dir", stateDir]);
      for (const pid of await survivors(pids, 5_000)) process.kill(pid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });

    // Two elections and a dozen commands, on a machine that may be busy.
    it("cuts the leader off, heals, and leaves no rule behind after down", async () => {
      const leader = (await status()).voters.find((v) => v.role === "leader")!.name;
      // Naming the leader twice is a wrong command line, found only once the cluster is asked: exit 2.
      const twice = await runCli(["partition", "leader", leader, "--state-dir", stateDir]);
      expect(twice.exitCode, twice.stderr).toBe(2);
      expect(twice.stderr).toContain("AppHostUsage");
      const others = ["voter1", "voter2", "voter3"].filter((name) => name !== leader);
      const cut = await runCli(["partition", others.join(","), "leader", "--state-dir", stateDir]);
      expect(cut.exitCode, cut.stderr).toBe(0);
      expect(cut.stdout).toContain(`partitioned: ${others.join(",")} | ${leader}`);
      // Both ways between the old leader and each of the other two.
      expect(chainRules().filter((rule) => rule.startsWith("-A KLAS-"))).toHaveLength(4);
      await waitFor("the majority elects a leader of its own", (s) => leaderAmong(s, others));

      const heal = await runCli(["heal", "--state-dir", stateDir]);
      expect(heal.exitCode, heal.stderr).toBe(0);
      expect(chainRules()).toEqual([]);
      await waitFor("every voter is ready again", (s) => s.voters.every((v) => v.health === "ready"));

      expect((await runCli(["partition", "voter1", "voter2,voter3", "--state-dir", stateDir])).exitCode).toBe(
        0,
      );
      expect(chainRules()).not.toEqual([]);
      const down = await runCli(["down", "--state-dir", stateDir]);
      expect(down.exitCode, down.stderr).toBe(0);
      expect(chainRules()).toEqual([]);
    }, 150_000);

    it("starts whole, and heals, a cluster whose partition outlived its voters", async () => {
      const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
      expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
      pids = (await status()).voters.flatMap((v) => (v.pid === null ? [] : [v.pid]));
      expect((await runCli(["partition", "voter1", "voter2,voter3", "--state-dir", stateDir])).exitCode).toBe(
        0,
      );
      // Nothing stops the voters gracefully: the rules stay behind.
      for (const pid of pids) process.kill(pid, "SIGKILL");
      expect(await survivors(pids, 10_000)).toEqual([]);
      expect(chainRules()).not.toEqual([]);
      const again = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir]);
      expect(again.exitCode, `${again.stdout}\n${again.stderr}`).toBe(0);
      pids = (await status()).voters.flatMap((v) => (v.pid === null ? [] : [v.pid]));
      expect(chainRules()).toEqual([]);

      // And `heal` finds a partition by its state dir alone, with nothing left there.
      expect((await runCli(["partition", "voter1", "voter2,voter3", "--state-dir", stateDir])).exitCode).toBe(
        0,
      );
      for (const pid of pids) process.kill(pid, "SIGKILL");
      expect(await survivors(pids, 10_000)).toEqual([]);
      rmSync(stateDir, { recursive: true, force: true });
      const heal = await runCli(["heal", "--state-dir", stateDir]);
      expect(heal.exitCode, heal.stderr).toBe(0);
      expect(chainRules()).toEqual([]);
    }, 150_000);
  },
);
