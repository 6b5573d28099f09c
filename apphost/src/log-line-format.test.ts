import { describe, expect, it } from "vitest";
import { APPHOST_USER_AGENT } from "./apphost-poll.js";
import { formatLogLine, isProbeLine } from "./log-line-format.js";

/** A voter's request log line, as pino writes it (fields left undefined are not written). */
const request = (
  route: string,
  userAgent?: string,
  shape: { method?: string; status?: number | null; principalId?: string } = {},
): string =>
  JSON.stringify({
    level: 30,
    time: 1,
    nodeId: "voter1",
    method: shape.method ?? "GET",
    route,
    status: shape.status === undefined ? 200 : shape.status,
    aborted: shape.status === null,
    durationMs: 1.5,
    principalId: shape.principalId,
    userAgent,
    msg: "request",
  });

/** Any C0 or C1 control character, or DEL: what must never reach the terminal from a voter's line. */
const CONTROL = /\p{Cc}/u;

describe("isProbeLine", () => {
  it("leaves out health probes, whoever sends them", () => {
    expect(isProbeLine(request("/health/ready", APPHOST_USER_AGENT))).toBe(true);
    expect(isProbeLine(request("/health/live", "kube-probe/1.30"))).toBe(true);
    expect(isProbeLine(request("/health/live"))).toBe(true);
    expect(isProbeLine(request("/health/ready", undefined, { status: 503 }))).toBe(true);
  });

  it("leaves out the AppHost's own polls", () => {
    const admin = { principalId: "admin" };
    expect(isProbeLine(request("/v1/admin/admission", APPHOST_USER_AGENT, admin))).toBe(true);
    expect(isProbeLine(request("/metrics", APPHOST_USER_AGENT, admin))).toBe(true);
    expect(isProbeLine(request("/v1/admin/cluster/members", APPHOST_USER_AGENT, admin))).toBe(true);
    // A voter that cannot answer the poll now (no leader, admission full), or a poll given up on.
    expect(
      isProbeLine(request("/v1/admin/cluster/members", APPHOST_USER_AGENT, { ...admin, status: 503 })),
    ).toBe(true);
    expect(isProbeLine(request("/v1/admin/admission", APPHOST_USER_AGENT, { ...admin, status: 429 }))).toBe(
      true,
    );
    expect(isProbeLine(request("/metrics", APPHOST_USER_AGENT, { ...admin, status: null }))).toBe(true);
  });

  it("keeps every other request, a client's admission reads and metric scrapes included", () => {
    expect(isProbeLine(request("/v1/admin/admission", "undici", { principalId: "admin" }))).toBe(false);
    expect(isProbeLine(request("/v1/admin/admission"))).toBe(false);
    expect(isProbeLine(request("/metrics", "Prometheus/2.53.0"))).toBe(false);
    expect(isProbeLine(request("/v1/catalog/{key}", `${APPHOST_USER_AGENT}-lookalike`))).toBe(false);
    expect(isProbeLine(JSON.stringify({ level: 30, time: 1, msg: "elected leader", term: 3 }))).toBe(false);
  });

  it("keeps a request that only borrows the AppHost's User-Agent", () => {
    const ua = APPHOST_USER_AGENT;
    // A guessed admin key, refused: a brute force must show.
    expect(isProbeLine(request("/v1/admin/admission", ua, { status: 401 }))).toBe(false);
    expect(isProbeLine(request("/v1/admin/cluster/members", ua, { status: 401 }))).toBe(false);
    // Another principal reading the admin routes, or the admin failing there.
    expect(isProbeLine(request("/v1/admin/admission", ua, { principalId: "alice" }))).toBe(false);
    expect(isProbeLine(request("/v1/admin/admission", ua, { principalId: "admin", status: 500 }))).toBe(
      false,
    );
    // Writes and reads of data, and methods the AppHost never polls with.
    expect(isProbeLine(request("/v1/catalog/{key}", ua, { method: "PUT", principalId: "admin" }))).toBe(
      false,
    );
    expect(isProbeLine(request("/v1/catalog/{key}", ua, { principalId: "alice" }))).toBe(false);
    expect(isProbeLine(request("/v1/admin/principals", ua, { method: "POST", principalId: "admin" }))).toBe(
      false,
    );
    expect(isProbeLine(request("/metrics", ua, { method: "POST", status: 404 }))).toBe(false);
    expect(isProbeLine(request("unmatched", ua, { status: 404 }))).toBe(false);
    expect(isProbeLine(request("/metrics", ua, { status: 401 }))).toBe(false);
  });

  it("is not fooled by the AppHost's User-Agent or a health route quoted inside another field", () => {
    const line = JSON.stringify({
      level: 30,
      time: 1,
      method: "PUT",
      route: "/v1/catalog/{key}",
      status: 200,
      principalId: "alice",
      userAgent: `x "userAgent":"${APPHOST_USER_AGENT}" "route":"/health/live"`,
      note: `"userAgent":"${APPHOST_USER_AGENT}","route":"/health/live"`,
      msg: "request",
    });
    expect(isProbeLine(line)).toBe(false);
  });
});

describe("formatLogLine", () => {
  it("escapes C0 and C1 controls and DEL in the message and every field, keeping other text", () => {
    const line = JSON.stringify({
      level: 30,
      time: 1,
      nodeId: "voter1",
      component: "http\u001b[2J",
      msg: "request \u001b]0;pwned\u0007 from Zoë \u009b31m",
      method: "GET",
      route: "/v1/catalog/{key}",
      // Node reads header bytes as latin1: 0x9b and 0x9d arrive as the C1 controls CSI and OSC.
      userAgent: "curl/8\u009b2J\u009d0;title\u009c",
      spaced: "a b\u001b[31mred\u007f",
      nested: { text: "\u009b1m東京" },
      err: { type: "Error", message: "boom\u001b[5m" },
    });
    const shown = formatLogLine("voter1", line, false);
    expect(shown).not.toMatch(CONTROL);
    expect(shown).toContain("request \\u001b]0;pwned\\u0007 from Zoë \\u009b31m");
    expect(shown).toContain("[http\\u001b[2J]");
    expect(shown).toContain("userAgent=");
    expect(shown).toContain("\\u009b2J\\u009d0;title\\u009c");
    expect(shown).toContain("\\u001b[31mred\\u007f");
    expect(shown).toContain("\\u009b1m東京");
    expect(shown).toContain("boom\\u001b[5m");
  });

  it("leaves ordinary text, non-ASCII letters included, as it is", () => {
    const line = JSON.stringify({ level: 30, time: 1, msg: "élu chef à Zürich, 東京", peerId: "voter2" });
    expect(formatLogLine("voter1", line, false)).toMatch(/ INFO {2}élu chef à Zürich, 東京 peerId=voter2$/);
  });

  it("escapes controls in a line that is not pino JSON too", () => {
    const shown = formatLogLine("voter1", "panic: \u001b]52;c;ZWNobyBwd25lZA==\u0007\u009b2J", false);
    expect(shown).not.toMatch(CONTROL);
    expect(shown).toContain("panic: \\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u009b2J");
  });

  it("keeps its own colours when asked for them", () => {
    const shown = formatLogLine("voter1", JSON.stringify({ level: 50, time: 1, msg: "x\u001b[8m" }), true);
    expect(shown).toContain("\u001b[31mERROR\u001b[0m");
    expect(shown).toContain("x\\u001b[8m");
  });
});
