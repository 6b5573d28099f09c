import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KeyLoadClient } from "@keyload/client";
import { afterEach, describe, expect, it } from "vitest";
import type { AppHostState } from "./apphost-state.js";
import type { ClusterStatus } from "./cluster-status.js";
import { engineUnavailableReason } from "./container-engine.js";
import { runCli, spawnCli, survivors } from "./test-fixtures/cli-process.js";

// CI starts a Docker engine and sets this, so there the tests fail rather than skip without one.
const required = process.env.KEYLOAD_REQUIRE_CONTAINER_RUNTIME === "1";
const unavailable = await engineUnavailableReason();

let dirs: string[] = [];
let leftovers: number[] = [];

function tempStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "keyload-containers-"));
  dirs.push(dir);
  return dir;
}

/** The containers of a state dir, running or not. */
function containersOf(stateDir: string): string[] {
  const out = execFileSync(
    "docker",
    ["ps", "--all", "--quiet", "--filter", `label=io.keyload.state-dir=${stateDir}`],
    { encoding: "utf8" },
  );
  return out.split("\n").filter((id) => id !== "");
}

function recordedPids(stateDir: string): number[] {
  const state = JSON.parse(readFileSync(join(stateDir, "apphost.json"), "utf8")) as AppHostState;
  return state.voters.flatMap((v) => (v.process ? [v.process.pid] : []));
}

async function status(stateDir: string): Promise<ClusterStatus> {
  const result = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ClusterStatus;
}

async function eventually(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return true;
}

afterEach(async () => {
  for (const dir of dirs) {
    await runCli(["down", "--state-dir", dir]);
    if (!unavailable) {
      const ids = containersOf(dir);
      if (ids.length > 0) execFileSync("docker", ["rm", "--force", ...ids]);
    }
    rmSync(dir, { recursive: true, force: true });
  }
  for (const pid of await survivors(leftovers, 0)) process.kill(pid, "SIGKILL");
  dirs = [];
  leftovers = [];
});

describe.skipIf(unavailable !== undefined && !required)(
  `the CLI's container runtime${unavailable ? ` (skipped: ${unavailable})` : ""}`,
  () => {
    it("runs a detached cluster in containers: status, writes, pause, kill and start, down", async () => {
      const stateDir = tempStateDir();
      const up = await runCli(
        ["up", "--detach", "--isolated", "--runtime", "container", "--state-dir", stateDir],
        {
          KeyLoad__HttpAdmission__MaxRequests: "21",
        },
      );
      expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
      expect(containersOf(stateDir)).toHaveLength(3);
      const s = await status(stateDir);
      expect(s.runtime).toBe("container");
      expect(s.voters.map((v) => v.state)).toEqual(["running", "running", "running"]);
      leftovers = recordedPids(stateDir);

      const adminKey = readFileSync(join(stateDir, "admin.key"), "utf8").trim();
      const client = new KeyLoadClient({ endpoints: s.voters.map((v) => v.httpUrl), apiKey: adminKey });
      try {
        await client.put("in-a-container", { n: 1 });
        const admission = await client.admissionStatus({ endpoint: s.voters[2]!.httpUrl });
        expect(admission.httpAdmission.limits).toMatchObject({ maxRequests: 21 });

        expect((await runCli(["pause", "voter1", "--state-dir", stateDir])).exitCode).toBe(0);
        expect((await status(stateDir)).voters[0]!.state).toBe("paused");
        expect((await runCli(["resume", "voter1", "--state-dir", stateDir])).exitCode).toBe(0);

        expect((await runCli(["kill", "voter3", "--state-dir", stateDir])).exitCode).toBe(0);
        expect((await status(stateDir)).voters[2]!.state).toBe("stopped");
        expect(await eventually(() => containersOf(stateDir).length === 2, 10_000)).toBe(true);
        const start = await runCli(["start", "voter3", "--state-dir", stateDir]);
        expect(start.exitCode, start.stderr).toBe(0);
        leftovers.push(...recordedPids(stateDir));
        // The restarted voter kept its data dir on the host, and catches up.
        await expect
          .poll(
            async () => {
              try {
                return (await client.get("in-a-container", { endpoint: s.voters[2]!.httpUrl })).version;
              } catch {
                return undefined;
              }
            },
            { timeout: 15_000, interval: 200 },
          )
          .toBe(1);
      } finally {
        await client.close();
      }

      const down = await runCli(["down", "--state-dir", stateDir]);
      expect(down.exitCode, down.stderr).toBe(0);
      expect(await survivors(leftovers, 5_000)).toEqual([]);
      expect(containersOf(stateDir)).toEqual([]);
      // Seven CLI runs, four container starts and a catch-up: on a busy machine, past the default 60 s.
    }, 150_000);

    it("leaves no container when the foreground AppHost is killed with SIGKILL", async () => {
      const stateDir = tempStateDir();
      const apphost = spawnCli(["up", "--isolated", "--runtime", "container", "--state-dir", stateDir]);
      try {
        await new Promise<void>((resolve, reject) => {
          let out = "";
          apphost.stdout?.on("data", (chunk: Buffer) => {
            out += chunk.toString();
            if (out.includes("KeyLoad is ready")) resolve();
          });
          void apphost.then((r) => reject(new Error(`the AppHost exited early: ${out}\n${r.stderr}`)));
        });
        leftovers = recordedPids(stateDir);
        expect(leftovers).toHaveLength(3);
        apphost.kill("SIGKILL");
        await apphost;
        expect(await survivors(leftovers, 10_000)).toEqual([]);
        expect(await eventually(() => containersOf(stateDir).length === 0, 10_000)).toBe(true);
      } finally {
        apphost.kill("SIGKILL");
      }
    });
  },
);
