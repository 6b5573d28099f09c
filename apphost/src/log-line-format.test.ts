import { describe, expect, it } from "vitest";
import { APPHOST_USER_AGENT } from "./apphost-poll.js";
import { isProbeLine } from "./log-line-format.js";

/** A voter's request log line, as pino writes it. */
const request = (route: string, userAgent?: string): string =>
  JSON.stringify({
    level: 30,
    time: 1,
    nodeId: "voter1",
    method: "GET",
    route,
    status: 200,
    userAgent,
    msg: "request",
  });

describe("isProbeLine", () => {
  it("leaves out health probes, whoever sends them", () => {
    expect(isProbeLine(request("/health/ready", APPHOST_USER_AGENT))).toBe(true);
    expect(isProbeLine(request("/health/live", "kube-probe/1.30"))).toBe(true);
    expect(isProbeLine(request("/health/live"))).toBe(true);
  });

  it("leaves out the AppHost's own polls", () => {
    expect(isProbeLine(request("/v1/admin/admission", APPHOST_USER_AGENT))).toBe(true);
    expect(isProbeLine(request("/metrics", APPHOST_USER_AGENT))).toBe(true);
    expect(isProbeLine(request("/v1/admin/cluster/members", APPHOST_USER_AGENT))).toBe(true);
  });

  it("keeps every other request, a client's admission reads and metric scrapes included", () => {
    expect(isProbeLine(request("/v1/admin/admission", "undici"))).toBe(false);
    expect(isProbeLine(request("/v1/admin/admission"))).toBe(false);
    expect(isProbeLine(request("/metrics", "Prometheus/2.53.0"))).toBe(false);
    expect(isProbeLine(request("/v1/catalog/{key}", `${APPHOST_USER_AGENT}-lookalike`))).toBe(false);
    expect(isProbeLine(JSON.stringify({ level: 30, time: 1, msg: "elected leader", term: 3 }))).toBe(false);
  });
});
