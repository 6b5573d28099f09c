import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DashboardAssetsError } from "./apphost-errors.js";
import { prepareCluster } from "./cluster-setup.js";
import type { DashboardHello, DashboardSnapshot } from "./dashboard-messages.js";
import { type Dashboard, serveDashboard } from "./dashboard-server.js";
import { dashboardSourceOf } from "./dashboard-source.js";
import { voterRuntimeOf } from "./voter-runtime.js";

let dir: string;
let assetsDir: string;
let dashboard: Dashboard | undefined;

/** The dashboard of a cluster that is set up but not started: every voter stopped. */
async function serveForStoppedCluster(
  options: { maxUnsentBytes?: number; intervalMs?: number } = {},
): Promise<Dashboard> {
  const { cluster } = await prepareCluster({
    stateDir: join(dir, "state"),
    isolated: true,
    fresh: false,
    variables: [{ name: "KeyLoad__CommandAdmission__MaxCommands", value: "99" }],
    supervised: true,
    runtime: await voterRuntimeOf("process"),
  });
  cluster.persist();
  dashboard = await serveDashboard(
    dashboardSourceOf(cluster.model, async () => cluster),
    {
      port: 0,
      assetsDir,
      intervalMs: 50,
      ...options,
    },
  );
  return dashboard;
}

/** A raw request, so the Host and Origin headers are the test's to choose. */
function send(
  url: string,
  method: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(method === "POST" ? "{}" : undefined);
  });
}

/** The events of the stream until `enough` says so. */
async function readEvents(url: string, enough: (events: { event: string; data: unknown }[]) => boolean) {
  const controller = new AbortController();
  const response = await fetch(`${url}/api/events`, { signal: controller.signal });
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const events: { event: string; data: unknown }[] = [];
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end = buffered.indexOf("\n\n");
    while (end >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event !== undefined && data !== undefined) events.push({ event, data: JSON.parse(data) });
      end = buffered.indexOf("\n\n");
    }
    if (enough(events)) break;
  }
  controller.abort();
  return events;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keyload-dashboard-"));
  assetsDir = join(dir, "dist");
  mkdirSync(join(assetsDir, "assets"), { recursive: true });
  writeFileSync(join(assetsDir, "index.html"), "<!doctype html><title>KeyLoad dashboard</title>");
  writeFileSync(join(assetsDir, "assets", "main-abc123.js"), "console.log(1)");
});

afterEach(async () => {
  await dashboard?.close();
  dashboard = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe("the dashboard's server", () => {
  it("serves the built page on loopback, and only its own files", async () => {
    const { url } = await serveForStoppedCluster();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const page = await send(`${url}/`, "GET");
    expect(page.status).toBe(200);
    expect(page.body).toContain("KeyLoad dashboard");
    expect(page.headers["content-security-policy"]).toContain("default-src 'self'");
    const script = await send(`${url}/assets/main-abc123.js`, "GET");
    expect(script).toMatchObject({ status: 200, body: "console.log(1)" });
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect((await send(`${url}/assets/../../state/admin.key`, "GET")).status).toBe(404);
    expect((await send(`${url}/nothing`, "GET")).status).toBe(404);
  });

  it("answers a request target it cannot read 400, and serves on", async () => {
    const { url } = await serveForStoppedCluster();
    const { host, port } = new URL(url);
    // Any page can make a browser send this (an image's source), to the dashboard's own Host.
    const answer = await new Promise<string>((resolve, reject) => {
      let text = "";
      const socket = connect(Number(port), "127.0.0.1", () =>
        socket.end(`GET //[ HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
      );
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => {
        text += chunk;
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect((await send(`${url}/`, "GET")).status).toBe(200);
  });

  it("refuses a request that names another host, as a rebinding page's would", async () => {
    const { url } = await serveForStoppedCluster();
    expect((await send(`${url}/`, "GET", { host: "attacker.example:80" })).status).toBe(421);
  });

  it("carries out an action only when posted as JSON from its own origin, and reports the AppHost's error", async () => {
    const { url } = await serveForStoppedCluster();
    const json = { "content-type": "application/json" };
    const pause = `${url}/api/voters/voter1/pause`;
    expect((await send(pause, "POST", { ...json, origin: "http://attacker.example" })).status).toBe(403);
    expect((await send(pause, "POST", { "content-type": "application/x-www-form-urlencoded" })).status).toBe(
      415,
    );
    expect((await send(`${url}/api/voters/voter9/pause`, "POST", json)).status).toBe(404);
    expect((await send(`${url}/api/voters/voter1/explode`, "POST", json)).status).toBe(404);
    // The voter is not running: the cluster says so, with its code.
    const refused = await send(pause, "POST", { ...json, origin: url });
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body)).toEqual({
      ok: false,
      code: "AppHostVoterState",
      message: "voter1 is not running",
    });
  });

  it("streams the cluster: a greeting with the voters and actions, then a reading every interval", async () => {
    const { url } = await serveForStoppedCluster();
    const events = await readEvents(url, (seen) => seen.filter((e) => e.event === "snapshot").length >= 2);
    const hello = events[0]!;
    expect(hello.event).toBe("hello");
    expect(hello.data).toMatchObject({
      stateDir: join(dir, "state"),
      voters: ["voter1", "voter2", "voter3"],
      actions: ["stop", "start", "restart", "kill", "pause", "resume", "transfer-leader"],
    } satisfies Partial<DashboardHello>);
    const snapshot = events.find((e) => e.event === "snapshot")!.data as DashboardSnapshot;
    expect(snapshot.voters.map((v) => [v.name, v.state, v.admission])).toEqual([
      ["voter1", "stopped", null],
      ["voter2", "stopped", null],
      ["voter3", "stopped", null],
    ]);
    expect(snapshot.voters[0]!.forwardedEnv).toEqual({ KeyLoad__CommandAdmission__MaxCommands: "99" });
  });

  it("closes the stream of a page that stopped reading, rather than keep its events", async () => {
    const log = join(dir, "state", "logs", "voter1.log");
    mkdirSync(join(dir, "state", "logs"), { recursive: true });
    writeFileSync(log, "");
    const { url } = await serveForStoppedCluster({ maxUnsentBytes: 64 * 1024 });
    const socket = connect(Number(new URL(url).port), "127.0.0.1");
    socket.pause();
    socket.write(`GET /api/events HTTP/1.1\r\nHost: ${new URL(url).host}\r\n\r\n`);
    // A voter logging fast: more than the loopback socket's buffers hold, sent as the page's rows.
    const line = `${JSON.stringify({ level: 30, time: 1, nodeId: "voter1", msg: "x".repeat(1000) })}\n`;
    const appending = setInterval(() => appendFileSync(log, line.repeat(1000)), 100);
    try {
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      // Read again: a stream the AppHost closed ends after what the kernel had; one it kept goes on.
      const closed = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 10_000);
        socket.on("close", () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      socket.on("error", () => {});
      socket.on("data", () => {});
      socket.resume();
      expect(await closed).toBe(true);
    } finally {
      clearInterval(appending);
      socket.destroy();
    }
  }, 30_000);

  it("refuses to start without its built page, saying how to build it", async () => {
    rmSync(join(assetsDir, "index.html"));
    await expect(serveForStoppedCluster()).rejects.toThrow(DashboardAssetsError);
    await expect(serveForStoppedCluster()).rejects.toThrow(/build:dashboard/);
  });
});
