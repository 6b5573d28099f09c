import { describe, expect, it } from "vitest";
import { UsageError } from "./apphost-errors.js";
import { dashboardPortFor, parseDashboardPort } from "./dashboard-port.js";

describe("the dashboard's port", () => {
  it("is 18888 by default, any free one with --isolated, the one given, and none for 0", () => {
    expect(dashboardPortFor(undefined, false)).toBe(18_888);
    expect(dashboardPortFor(undefined, true)).toBe(0);
    expect(dashboardPortFor(19_000, true)).toBe(19_000);
    expect(dashboardPortFor(0, false)).toBeNull();
    expect(dashboardPortFor(0, true)).toBeNull();
  });

  it("takes a port number and refuses anything else", () => {
    expect(parseDashboardPort("0")).toBe(0);
    expect(parseDashboardPort("65535")).toBe(65_535);
    for (const bad of ["65536", "-1", "80.5", "abc", ""]) {
      expect(() => parseDashboardPort(bad)).toThrow(UsageError);
    }
  });
});
