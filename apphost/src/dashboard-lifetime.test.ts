import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { defaultPorts } from "./app-model.js";
import { type AppHostState, writeState } from "./apphost-state.js";
import { dashboardStanding, watchDashboardLifetime } from "./dashboard-lifetime.js";
import { type ProcessRecord, recordOf } from "./process-table.js";

// This very process stands in for any process alive; pid 0 names none.
const alive = recordOf(process.pid);
const gone: ProcessRecord = { pid: 0, startTicks: null };
const self: ProcessRecord = { pid: process.pid, startTicks: alive.startTicks };
const other: ProcessRecord = { pid: process.pid, startTicks: (alive.startTicks ?? 0) + 1 };

function stateWith(dashboard: ProcessRecord | null, voters: ProcessRecord | null): AppHostState {
  return {
    version: 1,
    runtime: "process",
    mode: "detached",
    owner: null,
    dashboard: dashboard === null ? null : { ...dashboard, url: "http://127.0.0.1:1" },
    voters: defaultPorts().map((ports, i) => ({
      ...ports,
      name: (["voter1", "voter2", "voter3"] as const)[i]!,
      forwardedEnv: {},
      process: i === 0 ? voters : null,
    })),
  };
}

describe("dashboardStanding", () => {
  it("is needed while the up that starts it runs, whatever the state says yet", () => {
    expect(dashboardStanding(undefined, self, true)).toBe("needed");
    expect(dashboardStanding(stateWith(other, null), self, true)).toBe("needed");
  });

  it("is needed while a voter of its cluster runs, once recorded", () => {
    expect(dashboardStanding(stateWith(self, alive), self, false)).toBe("needed");
  });

  it("is idle once no voter runs", () => {
    expect(dashboardStanding(stateWith(self, gone), self, false)).toBe("idle");
    expect(dashboardStanding(stateWith(self, null), self, false)).toBe("idle");
  });

  it("is forgotten once the state records no dashboard, another one, or is gone", () => {
    expect(dashboardStanding(stateWith(null, alive), self, false)).toBe("forgotten");
    expect(dashboardStanding(stateWith(other, alive), self, false)).toBe("forgotten");
    expect(dashboardStanding(undefined, self, false)).toBe("forgotten");
  });
});

describe("watchDashboardLifetime", () => {
  let dir: string | undefined;
  let stop = (): void => {};

  afterEach(() => {
    stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  function watch(idleExitMs: number): { stateFile: string; left: Promise<string> } {
    dir = mkdtempSync(join(tmpdir(), "keyload-dashboard-lifetime-"));
    const stateFile = join(dir, "apphost.json");
    const left = new Promise<string>((resolve) => {
      stop = watchDashboardLifetime({
        stateFile,
        self,
        starter: gone,
        idleExitMs,
        pollMs: 10,
        onLeave: resolve,
      });
    });
    return { stateFile, left };
  }

  it("leaves once its voters have been gone for the idle time, not before", async () => {
    const { stateFile, left } = watch(300);
    writeState(stateFile, stateWith(self, gone));
    const startedAt = Date.now();
    expect(await left).toContain("none of the cluster's voters has run");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(290);
  });

  it("stays while a voter runs", async () => {
    const { stateFile, left } = watch(50);
    writeState(stateFile, stateWith(self, alive));
    const outcome = await Promise.race([left, new Promise((r) => setTimeout(() => r("stayed"), 300))]);
    expect(outcome).toBe("stayed");
  });

  it("leaves at once when its state dir is wiped", async () => {
    const { left } = watch(60_000);
    expect(await left).toContain("no longer records this dashboard");
  });
});
