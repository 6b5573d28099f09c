import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AppHostState } from "./apphost-state.js";
import type { ClusterStatus } from "./cluster-status.js";
import { runCli, spawnCli, survivors } from "./test-fixtures/cli-process.js";

let dir: string | undefined;
let leftovers: number[] = [];

afterEach(async () => {
  for (const pid of await survivors(leftovers, 0)) process.kill(pid, "SIGKILL");
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  leftovers = [];
});

async function status(stateDir: string): Promise<ClusterStatus> {
  const result = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ClusterStatus;
}

/** Resolves with what the foreground AppHost printed once the cluster is ready. */
function readyOutput(child: ReturnType<typeof spawnCli>): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Press Ctrl-C")) resolve(out);
    });
    void child.then((r) =>
      reject(new Error(`the AppHost exited early (${r.exitCode}): ${out}\n${r.stderr}`)),
    );
  });
}

describe("up's dashboard", () => {
  it("is served by the foreground AppHost on a free port with --isolated, printed and in status, and gone with it", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-up-dashboard-"));
    const stateDir = dir;
    const apphost = spawnCli(["up", "--isolated", "--state-dir", stateDir]);
    try {
      const out = await readyOutput(apphost);
      const state = JSON.parse(readFileSync(join(stateDir, "apphost.json"), "utf8")) as AppHostState;
      leftovers = state.voters.flatMap((v) => (v.process ? [v.process.pid] : []));
      const printed = /dashboard {2}(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      expect(printed, out).toBeDefined();
      expect(printed).not.toBe("http://127.0.0.1:18888");
      expect((await status(stateDir)).dashboardUrl).toBe(printed);
      const page = await fetch(`${printed}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("KeyLoad dashboard");

      apphost.kill("SIGINT");
      expect((await apphost).exitCode).toBe(0);
      expect((await status(stateDir)).dashboardUrl).toBeNull();
      await expect(fetch(`${printed}/`)).rejects.toThrow();
    } finally {
      apphost.kill("SIGKILL");
    }
  });

  it("is not served with --dashboard-port 0", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-up-dashboard-"));
    const stateDir = dir;
    const apphost = spawnCli(["up", "--isolated", "--dashboard-port", "0", "--state-dir", stateDir]);
    try {
      const out = await readyOutput(apphost);
      const state = JSON.parse(readFileSync(join(stateDir, "apphost.json"), "utf8")) as AppHostState;
      leftovers = state.voters.flatMap((v) => (v.process ? [v.process.pid] : []));
      expect(out).not.toMatch(/^ {2}dashboard {2}/m);
      expect((await status(stateDir)).dashboardUrl).toBeNull();
      apphost.kill("SIGINT");
      expect((await apphost).exitCode).toBe(0);
    } finally {
      apphost.kill("SIGKILL");
    }
  });
});
