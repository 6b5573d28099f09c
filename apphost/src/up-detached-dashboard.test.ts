import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AppHostState, DashboardRecord } from "./apphost-state.js";
import type { ClusterStatus } from "./cluster-status.js";
import { isAlive } from "./process-table.js";
import { runCli, survivors } from "./test-fixtures/cli-process.js";

// Each test runs `up --detach` through the command line; whatever it started is stopped after it,
// passed or not: `down` first, then SIGKILL for any process the state ever recorded.
let dir: string | undefined;
let seen = new Set<number>();
let held: Server | undefined;

function stateFile(): string {
  return join(dir!, "state", "apphost.json");
}

function readRecorded(): AppHostState | undefined {
  if (dir === undefined || !existsSync(stateFile())) return undefined;
  const state = JSON.parse(readFileSync(stateFile(), "utf8")) as AppHostState;
  for (const v of state.voters) if (v.process) seen.add(v.process.pid);
  if (state.dashboard) seen.add(state.dashboard.pid);
  return state;
}

function recordedDashboard(): DashboardRecord {
  const dashboard = readRecorded()?.dashboard;
  expect(dashboard, "the state records a dashboard process").toBeTruthy();
  return dashboard!;
}

afterEach(async () => {
  if (dir !== undefined) {
    readRecorded();
    await runCli(["down", "--state-dir", join(dir, "state")]);
  }
  for (const pid of await survivors([...seen], 0)) process.kill(pid, "SIGKILL");
  await new Promise<void>((resolve) => (held ? held.close(() => resolve()) : resolve()));
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  seen = new Set();
  held = undefined;
});

async function upDetached(...extra: string[]): Promise<string> {
  const up = await runCli(["up", "--detach", "--isolated", "--state-dir", join(dir!, "state"), ...extra]);
  readRecorded();
  expect(up.exitCode, `${up.stdout}\n${up.stderr}`).toBe(0);
  return up.stdout;
}

async function status(): Promise<ClusterStatus> {
  const result = await runCli(["status", "--json", "--state-dir", join(dir!, "state")]);
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ClusterStatus;
}

async function expectServed(url: string): Promise<void> {
  const page = await fetch(`${url}/`);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("KeyLoad dashboard");
}

function killVoters(): void {
  for (const v of readRecorded()?.voters ?? []) {
    if (v.process && isAlive(v.process)) process.kill(v.process.pid, "SIGKILL");
  }
}

/** Resolves once the process is gone; fails the test if it is still alive after `timeoutMs`. */
async function expectGone(record: DashboardRecord, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isAlive(record) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  expect(isAlive(record), `dashboard process ${record.pid} still alive`).toBe(false);
}

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("a detached cluster's dashboard", () => {
  it("is served by a process of its own, found by status, logged to the log dir and stopped by down", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-detached-dashboard-"));
    const out = await upDetached();
    const printed = /^ {2}dashboard {2}(http:\/\/127\.0\.0\.1:\d+)$/m.exec(out)?.[1];
    expect(printed, out).toBeDefined();
    expect(printed).not.toBe("http://127.0.0.1:18888");
    expect(out).not.toContain("No dashboard");

    const dashboard = recordedDashboard();
    expect(dashboard.url).toBe(printed);
    // Not the `up` that has returned: a process of its own, alive and serving after it.
    expect(isAlive(dashboard)).toBe(true);
    expect(readFileSync(`/proc/${dashboard.pid}/cmdline`, "utf8")).toContain("dashboard-daemon");
    expect((await status()).dashboardUrl).toBe(printed);
    await expectServed(printed!);
    expect(readFileSync(join(dir, "state", "logs", "dashboard.log"), "utf8")).toContain(`serving ${printed}`);
    // Its readings while the cluster bootstrapped are the AppHost's own polls, left out of `logs`.
    const logs = await runCli(["logs", "--state-dir", join(dir, "state")]);
    expect(logs.stdout).toContain("voter started");
    expect(logs.stdout).not.toContain("userAgent=keyload-apphost");

    const down = await runCli(["down", "--state-dir", join(dir, "state")]);
    expect(down.exitCode, down.stderr).toBe(0);
    expect(isAlive(dashboard)).toBe(false);
    expect(readRecorded()?.dashboard ?? null).toBeNull();
    expect((await status()).dashboardUrl).toBeNull();
    await expect(fetch(`${printed}/`)).rejects.toThrow();
  });

  it("gives way to a later up on its port once its voters are killed, and leaves by itself otherwise", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-detached-dashboard-"));
    const port = await freePort();
    await upDetached("--dashboard-port", String(port));
    const first = recordedDashboard();
    expect(first.url).toBe(`http://127.0.0.1:${port}`);

    // Killed by hand, nobody stops it: a new `up` on the same port replaces it rather than fail on it.
    killVoters();
    await upDetached("--dashboard-port", String(port));
    const second = recordedDashboard();
    expect(isAlive(first)).toBe(false);
    expect(second.pid).not.toBe(first.pid);
    expect(second.url).toBe(first.url);
    expect((await status()).dashboardUrl).toBe(second.url);
    await expectServed(second.url);
    // Over a running cluster, `up` says so and leaves its dashboard be, its port taken or not.
    const over = await runCli([
      "up",
      "--detach",
      "--dashboard-port",
      String(port),
      "--state-dir",
      join(dir, "state"),
    ]);
    expect(over.exitCode).toBe(1);
    expect(over.stderr).toContain("[AppHostClusterRunning]");
    expect(isAlive(second)).toBe(true);

    // With nobody to stop it, it goes once its voters have been gone a while (15 s).
    killVoters();
    await expectGone(second, 30_000);
    expect((await status()).dashboardUrl).toBeNull();
    expect(readFileSync(join(dir, "state", "logs", "dashboard.log"), "utf8")).toContain(
      "none of the cluster's voters has run",
    );
  }, 120_000);

  it("refuses a dashboard port in use before anything starts, naming --dashboard-port", async () => {
    dir = mkdtempSync(join(tmpdir(), "keyload-detached-dashboard-"));
    const server = createServer();
    held = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const up = await runCli([
      "up",
      "--detach",
      "--isolated",
      "--dashboard-port",
      String(port),
      "--state-dir",
      join(dir, "state"),
    ]);
    readRecorded();
    expect(up.exitCode).toBe(1);
    expect(up.stderr).toContain(`port ${port}`);
    expect(up.stderr).toContain("--dashboard-port");
    expect(up.stderr).toContain("[AppHostPortInUse]");
    expect(existsSync(stateFile())).toBe(false);
  });
});
