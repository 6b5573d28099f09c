import { describe, expect, it } from "vitest";
import { DashboardProcessError } from "./apphost-errors.js";
import {
  type DashboardLaunch,
  isDashboardReport,
  launchArgs,
  parseLaunch,
} from "./dashboard-daemon-protocol.js";

describe("the dashboard process's launch and report", () => {
  it("carries the launch through the process's arguments unchanged", () => {
    const launch: DashboardLaunch = {
      stateDir: "/tmp/a dir with spaces/state",
      port: 0,
      starter: { pid: 42, startTicks: null },
      idleExitMs: 15_000,
    };
    expect(parseLaunch(launchArgs(launch))).toEqual(launch);
  });

  it("refuses arguments that are not a launch", () => {
    for (const argv of [[], ["not json"], ["{}"], ['{"stateDir":"/s","port":"1"}'], ["{}", "{}"]]) {
      expect(() => parseLaunch(argv)).toThrow(DashboardProcessError);
    }
  });

  it("tells a report from anything else on the channel", () => {
    expect(isDashboardReport({ kind: "serving", url: "http://127.0.0.1:1" })).toBe(true);
    expect(isDashboardReport({ kind: "failed", code: "AppHostPortInUse", message: "taken" })).toBe(true);
    expect(isDashboardReport({ kind: "serving" })).toBe(false);
    expect(isDashboardReport("serving")).toBe(false);
    expect(isDashboardReport(null)).toBe(false);
  });
});
