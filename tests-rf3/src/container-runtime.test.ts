import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  containerRuntimeUnavailableReason,
  partitionsUnavailable,
  type TestCluster,
  VOTER_NAMES,
  type VoterName,
} from "@keyload/apphost/testing";
import { describe, expect, it, onTestFinished } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

// CI starts a Docker engine and sets this, so there the test fails rather than skips without one.
const required = process.env.KEYLOAD_REQUIRE_CONTAINER_RUNTIME === "1";
const unavailable = await containerRuntimeUnavailableReason();

const startCluster = clusterPerTest();

interface ListedContainer {
  readonly voter: string;
  readonly pid: number;
  readonly status: string;
}

/** The containers of a cluster's state dir, running or not, as the engine lists them (`docker ps -a`). */
function containersOf(stateDir: string): ListedContainer[] {
  const docker = (args: string[]): string =>
    execFileSync("docker", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  const format = '{{index .Config.Labels "io.keyload.voter"}} {{.State.Pid}} {{.State.Status}}';
  for (let attempt = 1; ; attempt++) {
    const ids = docker(["ps", "--all", "--quiet", "--filter", `label=io.keyload.state-dir=${stateDir}`]);
    if (ids === "") return [];
    try {
      return docker(["inspect", "--format", format, ...ids.split("\n")])
        .split("\n")
        .map((line) => {
          const [voter = "", pid = "0", status = ""] = line.split(" ");
          return { voter, pid: Number(pid), status };
        })
        .sort((a, b) => a.voter.localeCompare(b.voter));
    } catch (error) {
      // A container listed a moment ago may be removed before it is inspected: list again.
      if (attempt === 3) throw error;
    }
  }
}

/** Each running voter's pid, as the cluster reports it: its container's process in the host's pid namespace. */
function voterPids(cluster: TestCluster): ListedContainer[] {
  return cluster.voters
    .filter((v) => v.pid !== null)
    .map((v) => ({ voter: v.name, pid: v.pid!, status: "running" }));
}

/** The scheduler's state letter of a host process: `T` once SIGSTOP has stopped it. */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]!;
}

describe.skipIf(unavailable !== undefined && !required)(
  `the testing API's container runtime${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("runs each voter in a container: writes, kill and start, restart, pause, partition, and dispose removes every container", async () => {
      const cluster = await startCluster({
        runtime: "container",
        env: { KeyLoad__Raft__ElectionTimeoutMs: "400", KeyLoad__Raft__HeartbeatIntervalMs: "50" },
      });
      const { stateDir } = cluster;
      // After the fixture's dispose, which runs in afterEach.
      onTestFinished(() => {
        expect(containersOf(stateDir)).toEqual([]);
      });
      expect(containersOf(stateDir)).toEqual(voterPids(cluster));

      const client = cluster.adminClient();
      await client.put("in-a-container", { n: 1 });
      expect((await client.get("in-a-container")).value).toEqual({ n: 1 });

      // SIGKILL through the voter's pid ends its container, which the engine removes.
      const killed = (await cluster.waitForLeader()).name;
      await cluster.kill(killed);
      await waitUntil(`${killed}'s container to be removed`, async (seen) => {
        const left = containersOf(stateDir);
        seen(left);
        return left.some((c) => c.voter === killed) ? undefined : true;
      });
      const successor = await cluster.waitForLeader({ excluding: [killed], timeoutMs: 20_000 });
      await client.put("while-killed", 2, { endpoint: successor.httpUrl });
      // A new container on the same data dir: the voter catches up.
      await cluster.start(killed);
      await cluster.waitForReady(20_000);
      expect(containersOf(stateDir)).toEqual(voterPids(cluster));
      expect((await client.get("while-killed", { endpoint: cluster.voter(killed).httpUrl })).value).toBe(2);

      const restarted: VoterName = killed === "voter2" ? "voter3" : "voter2";
      const before = cluster.voter(restarted).pid;
      await cluster.restart(restarted);
      await cluster.waitForReady(20_000);
      expect(cluster.voter(restarted).pid).not.toBe(before);
      expect(containersOf(stateDir)).toEqual(voterPids(cluster));

      // SIGSTOP reaches the voter in its container: the others elect a leader without it.
      const paused = (await cluster.waitForLeader()).name;
      cluster.pause(paused);
      const pausedPid = cluster.voter(paused).pid!;
      // The signal is delivered a moment after kill(2) returns.
      await waitUntil(`${paused} to be stopped`, async (seen) => {
        const state = processState(pausedPid);
        seen(state);
        return state === "T" ? true : undefined;
      });
      const standIn = await cluster.waitForLeader({ excluding: [paused], timeoutMs: 20_000 });
      await client.put("while-paused", 3, { endpoint: standIn.httpUrl });
      cluster.resume(paused);
      await cluster.waitForReady(20_000);
      expect((await client.get("while-paused", { endpoint: cluster.voter(paused).httpUrl })).value).toBe(3);

      // The containers share the host's network, so partitions cut them as they cut processes.
      if ((await partitionsUnavailable()) === undefined) {
        const isolated = (await cluster.waitForLeader()).name;
        await cluster.partition([[isolated], VOTER_NAMES.filter((name) => name !== isolated)]);
        const majority = await cluster.waitForLeader({ excluding: [isolated], timeoutMs: 20_000 });
        await client.put("partitioned", 4, { endpoint: majority.httpUrl });
        await cluster.heal();
        await cluster.waitForReady(20_000);
      }

      // A voter started alone among stopped ones is up once it answers, though it cannot be ready.
      for (const name of VOTER_NAMES) await cluster.kill(name);
      for (const name of VOTER_NAMES) await cluster.start(name);
      await cluster.waitForReady(20_000);
      expect(containersOf(stateDir)).toEqual(voterPids(cluster));
      expect((await client.get("while-paused")).value).toBe(3);
    });
  },
);
