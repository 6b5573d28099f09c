import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildAppModel, defaultPorts } from "./app-model.js";
import { PortInUseError } from "./apphost-errors.js";
import { type AppHostState, readState, writeState } from "./apphost-state.js";
import { startDetachedDashboard, stopDetachedDashboard } from "./detached-dashboard.js";
import { isAlive, type ProcessRecord } from "./process-table.js";

// The dashboard process alone, with no cluster: while this test process (its starter) runs, it stays.
let dir: string | undefined;
let started: ProcessRecord[] = [];
let held: Server | undefined;

afterEach(async () => {
  for (const record of started) if (isAlive(record)) process.kill(record.pid, "SIGKILL");
  await new Promise<void>((resolve) => (held ? held.close(() => resolve()) : resolve()));
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
  started = [];
  held = undefined;
});

function model() {
  dir = mkdtempSync(join(tmpdir(), "keyload-detached-dashboard-unit-"));
  return buildAppModel(join(dir, "state"), defaultPorts());
}

function stateRecording(dashboard: AppHostState["dashboard"]): AppHostState {
  return {
    version: 1,
    runtime: "process",
    mode: "detached",
    owner: null,
    dashboard,
    voters: defaultPorts().map((ports, i) => ({
      ...ports,
      name: (["voter1", "voter2", "voter3"] as const)[i]!,
      forwardedEnv: {},
      process: null,
    })),
  };
}

describe("the detached dashboard process", () => {
  it("serves until stopped, and stopping it clears its record", async () => {
    const m = model();
    const record = await startDetachedDashboard(m, 0);
    started.push(record);
    expect(isAlive(record)).toBe(true);
    expect(record.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${record.url}/`)).status).toBe(200);
    expect(readFileSync(join(m.logDir, "dashboard.log"), "utf8")).toContain(`serving ${record.url}`);

    writeState(m.stateFile, stateRecording(record));
    expect(await stopDetachedDashboard(m.stateFile)).toBe(true);
    expect(isAlive(record)).toBe(false);
    expect(readState(m.stateFile)?.dashboard).toBeNull();
    expect(await stopDetachedDashboard(m.stateFile)).toBe(false);
  });

  it("fails with the foreground's PortInUseError on a port taken since up checked it", async () => {
    const server = createServer();
    held = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const failed = startDetachedDashboard(model(), port);
    await expect(failed).rejects.toBeInstanceOf(PortInUseError);
    await expect(failed).rejects.toThrow("--dashboard-port");
  });
});
