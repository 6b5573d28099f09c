import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AppHostState } from "./apphost-state.js";
import { runCli, spawnCli, survivors } from "./test-fixtures/cli-process.js";

let dirs: string[] = [];
let leftovers: number[] = [];

function tempStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "keyload-cli-failures-"));
  dirs.push(dir);
  return dir;
}

function recordedPids(stateDir: string): number[] {
  const state = JSON.parse(readFileSync(join(stateDir, "apphost.json"), "utf8")) as AppHostState;
  return state.voters.flatMap((v) => (v.process ? [v.process.pid] : []));
}

/** Resolves once the foreground AppHost has printed that the cluster is ready. */
function readyOutput(child: ReturnType<typeof spawnCli>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("KeyLoad is ready")) resolve(out);
    });
    void child.then((r) =>
      reject(new Error(`the AppHost exited early (${r.exitCode}): ${out}\n${r.stderr}`)),
    );
  });
}

afterEach(async () => {
  // Voters of an `up` that succeeded where the test expected it to fail are stopped too.
  for (const dir of dirs) {
    if (existsSync(join(dir, "apphost.json"))) leftovers.push(...recordedPids(dir));
  }
  for (const pid of await survivors(leftovers, 0)) process.kill(pid, "SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
  leftovers = [];
});

describe("the AppHost command line, when things go wrong", () => {
  it("reports a bad value with the voter's own message naming the key, and leaves no voter running", async () => {
    const stateDir = tempStateDir();
    const up = await runCli(["up", "--detach", "--isolated", "--state-dir", stateDir], {
      AppHost__Voters__voter2__KeyLoad__Raft__ElectionTimeoutMs: "soon",
    });
    expect(up.exitCode).toBe(1);
    expect(up.stderr).toContain("voter2 failed to start: exited with code 2");
    expect(up.stderr).toContain("KeyLoad:Raft:ElectionTimeoutMs");
    expect(up.stderr).toContain("[AppHostVoterFailedToStart]");
    leftovers = recordedPids(stateDir);
    expect(await survivors(leftovers, 5_000)).toEqual([]);
  });

  it("refuses a setting the AppHost owns before starting anything", async () => {
    const up = await runCli(["up", "--detach", "--isolated", "--state-dir", tempStateDir()], {
      KeyLoad__Node__HttpPort: "9999",
    });
    expect(up.exitCode).toBe(1);
    expect(up.stderr).toContain("KeyLoad__Node__HttpPort");
    expect(up.stderr).toContain("[AppHostInvalidSetting]");
  });

  it("names a default port that is already taken", async () => {
    // If another process holds 7101 already, the AppHost must name it all the same.
    const holder: Server | undefined = await new Promise((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(undefined));
      server.listen(7101, "127.0.0.1", () => resolve(server));
    });
    try {
      const up = await runCli(["up", "--detach", "--state-dir", tempStateDir()]);
      expect(up.exitCode).toBe(1);
      expect(up.stderr).toContain("port 7101 on 127.0.0.1 (voter1 HTTP) is already in use");
      expect(up.stderr).toContain("[AppHostPortInUse]");
    } finally {
      holder?.close();
    }
  });

  it("stops at a dashboard port in use before --fresh wipes anything, naming what to do", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as AddressInfo).port;
    const stateDir = tempStateDir();
    mkdirSync(stateDir, { recursive: true });
    // A state dir of an earlier cluster, which --fresh would wipe.
    writeFileSync(join(stateDir, "admin.key"), "kl_an-earlier-clusters-key");
    try {
      const up = await runCli([
        "up",
        "--fresh",
        "--isolated",
        "--dashboard-port",
        String(port),
        "--state-dir",
        stateDir,
      ]);
      expect(up.exitCode).toBe(1);
      expect(up.stderr).toContain(`port ${port} on 127.0.0.1 (dashboard) is already in use`);
      expect(up.stderr).toContain("--dashboard-port N (0: no dashboard)");
      expect(up.stderr).toContain("[AppHostPortInUse]");
      expect(readFileSync(join(stateDir, "admin.key"), "utf8")).toBe("kl_an-earlier-clusters-key");
    } finally {
      holder.close();
    }
  });

  it("says the container runtime is unavailable without an engine, and rejects a bad command line", async () => {
    const stateDir = tempStateDir();
    const container = await runCli(["up", "--runtime", "container", "--isolated", "--state-dir", stateDir], {
      DOCKER_HOST: `unix://${join(stateDir, "no-engine.sock")}`,
    });
    expect(container.exitCode).toBe(1);
    expect(container.stderr).toContain("needs a Docker engine, and none answers");
    expect(container.stderr).toContain("[AppHostContainerRuntimeUnavailable]");
    const usage = await runCli(["frobnicate"]);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toContain('unknown command "frobnicate"');
    const noVoter = await runCli(["pause", "voter7"]);
    expect(noVoter.exitCode).toBe(2);
    expect(noVoter.stderr).toContain("[AppHostUnknownVoter]");
  });

  it("says partition needs iptables where there is none, and that a state dir without a cluster has none", async () => {
    const stateDir = tempStateDir();
    // Only node itself on the PATH: no iptables to find.
    const partition = await runCli(["partition", "voter1", "voter2,voter3", "--state-dir", stateDir], {
      PATH: dirname(process.execPath),
    });
    expect(partition.exitCode).toBe(1);
    expect(partition.stderr).toMatch(/partition needs (root|iptables)/);
    expect(partition.stderr).toContain("[AppHostPartitionUnavailable]");
    for (const args of [["admission"], ["transfer-leader", "leader"], ["logs", "leader"]]) {
      const none = await runCli([...args, "--state-dir", stateDir]);
      expect(none.exitCode, args.join(" ")).toBe(1);
      expect(none.stderr).toContain("[AppHostNoCluster]");
    }
  });

  it("leaves no orphan when the foreground AppHost is killed with SIGKILL", async () => {
    const stateDir = tempStateDir();
    const apphost = spawnCli(["up", "--isolated", "--state-dir", stateDir]);
    try {
      await readyOutput(apphost);
      leftovers = recordedPids(stateDir);
      expect(leftovers).toHaveLength(3);
      apphost.kill("SIGKILL");
      await apphost;
      expect(await survivors(leftovers, 10_000)).toEqual([]);
    } finally {
      apphost.kill("SIGKILL");
    }
  });

  it("takes commands for a foreground cluster from another terminal, down included", async () => {
    const stateDir = tempStateDir();
    const apphost = spawnCli(["up", "--isolated", "--state-dir", stateDir]);
    try {
      await readyOutput(apphost);
      leftovers = recordedPids(stateDir);
      const stop = await runCli(["stop", "voter2", "--state-dir", stateDir]);
      expect(stop.stdout).toContain("voter2 stopped");
      const start = await runCli(["start", "voter2", "--state-dir", stateDir]);
      expect(start.exitCode, start.stderr).toBe(0);
      const restarted = recordedPids(stateDir);
      leftovers.push(...restarted);
      // Started by the foreground AppHost, so it dies with it like the others.
      const voter2 = restarted[1]!;
      const parent = readFileSync(`/proc/${voter2}/stat`, "utf8").split(") ")[1]!.split(" ")[1];
      expect(Number(parent)).toBe(apphost.pid);

      const down = await runCli(["down", "--state-dir", stateDir]);
      expect(down.exitCode, down.stderr).toBe(0);
      const result = await apphost;
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain("voter stopped");
      expect(await survivors(leftovers, 2_000)).toEqual([]);
    } finally {
      apphost.kill("SIGKILL");
    }
  });
});
