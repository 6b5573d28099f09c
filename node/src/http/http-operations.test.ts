import { pino } from "pino";
import { Gauge } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { HttpAdmissionGovernor } from "../admission/index.js";
import { buildHttpApp } from "./http-app.js";
import { createHttpServer } from "./http-server.js";
import { expectContractError } from "./test-fixtures/contract-error.js";
import { bearer, FakeVoterService, KEYS } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture, idleStatus } from "./test-fixtures/http-fixture.js";
import { exchange, open, waitFor } from "./test-fixtures/raw-http.js";

let fx: HttpFixture;
afterEach(async () => {
  await waitFor(() => fx.governor.usage("data").requests === 0, "idle");
  expect(fx.governor.status()).toMatchObject(idleStatus());
  await fx.close();
});

describe("health", () => {
  it("answers live and ready with the voter's report", async () => {
    fx = httpFixture();
    for (const url of ["/health/live", "/health/ready"]) {
      const response = await fx.app.inject({ method: "GET", url });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ live: true, ready: true, detail: { role: "leader", term: 3 } });
    }
  });

  it("answers 503 Unavailable when not ready, and when not live", async () => {
    fx = httpFixture();
    fx.service.healthReport = { live: true, ready: false, detail: { role: "follower", leader: null } };
    const notReady = await fx.app.inject({ method: "GET", url: "/health/ready" });
    const error = expectContractError(notReady, 503, "Unavailable", "NotReady");
    expect(error.details).toEqual({ role: "follower", leader: null });
    expect((await fx.app.inject({ method: "GET", url: "/health/live" })).statusCode).toBe(200);
    fx.service.healthReport = { live: false, ready: false, detail: {} };
    expectContractError(
      await fx.app.inject({ method: "GET", url: "/health/live" }),
      503,
      "Unavailable",
      "NotLive",
    );
  });

  it("spends no pool, even when the pool is full; health needs no key, metrics and the API document one", async () => {
    fx = httpFixture({ admission: { MaxRequests: 1 } });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    fx.service.onRead = async () => {
      await gate;
      return {};
    };
    const held = fx.app.inject({
      method: "GET",
      url: "/v1/catalog/k",
      headers: { authorization: bearer("reader") },
    });
    await waitFor(() => fx.service.reads.length === 1, "the held read");
    const authentications = fx.service.authentications;
    for (const url of ["/health/live", "/health/ready"]) {
      for (const headers of [{}, { authorization: "Bearer nonsense" }]) {
        const response = await fx.app.inject({ method: "GET", url, headers });
        expect(response.statusCode, url).toBe(200);
      }
    }
    expect(fx.service.authentications).toBe(authentications);
    // Every public route but health needs a key (contract section 3): any role will do.
    for (const url of ["/metrics", "/openapi.json"]) {
      const missing = await fx.app.inject({ method: "GET", url });
      expectContractError(missing, 401, "Unauthenticated", "MissingCredentials");
      const wrong = await fx.app.inject({
        method: "GET",
        url,
        headers: { authorization: "Bearer nonsense" },
      });
      expectContractError(wrong, 401, "Unauthenticated", "InvalidCredentials");
      for (const role of ["reader", "writer", "admin"] as const) {
        const response = await fx.app.inject({
          method: "GET",
          url,
          headers: { authorization: bearer(role) },
        });
        expect(response.statusCode, `${url} as ${role}`).toBe(200);
      }
    }
    expect(fx.governor.usage("data").requests).toBe(1);
    expect(fx.governor.usage("control").requests).toBe(0);
    release();
    await held;
  });
});

describe("metrics", () => {
  it("serves the voter's registry with the edge's latency, usage and rejections", async () => {
    fx = httpFixture({ admission: { MaxRequestsPerPrincipal: 1 } });
    new Gauge({ name: "keyload_raft_term", help: "term", registers: [fx.service.metricsRegistry] }).set(7);
    await fx.putAsWriter('{"value":1}');
    await fx.app.inject({ method: "GET", url: "/v1/nowhere" });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    fx.service.onRead = async () => {
      await gate;
      return {};
    };
    const held = fx.app.inject({
      method: "GET",
      url: "/v1/catalog/k",
      headers: { authorization: bearer("reader") },
    });
    await waitFor(() => fx.service.reads.length === 1, "the held read");
    await fx.app.inject({
      method: "GET",
      url: "/v1/catalog/k",
      headers: { authorization: bearer("reader") },
    });

    const response = await fx.app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: bearer("reader") },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    expect(text).toContain("keyload_raft_term 7");
    expect(text).toMatch(
      /keyload_http_request_duration_seconds_count\{method="PUT",route="\/v1\/catalog\/\{key\}",status="200"\} 1/,
    );
    expect(text).toMatch(
      /keyload_http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} 1/,
    );
    expect(text).toContain('keyload_http_admission_requests{pool="data"} 1');
    expect(text).toContain('keyload_http_admission_requests{pool="control"} 0');
    expect(text).toContain(`keyload_http_admission_modeled_bytes{pool="data"} ${8 * 1024 * 1024 + 4096}`);
    expect(text).toContain('keyload_http_admission_ingress_requests{pool="data"} 0');
    expect(text).toContain('keyload_http_admission_waiting_requests{pool="control"} 0');
    expect(text).toContain(
      'keyload_http_admission_rejections_total{pool="data",reason="PrincipalRequests"} 1',
    );
    expect(text).toContain('keyload_http_admission_rejections_total{pool="control",reason="BodyTooLarge"} 0');
    release();
    await held;
  });

  it("reports the edge and respond stages of each answered write, in its lane", async () => {
    fx = httpFixture();
    const write = (url: string, commandId: string, authorization = bearer("writer")) =>
      fx.app.inject({
        method: url.startsWith("/v1/dispatch") ? "POST" : "PUT",
        url,
        headers: { authorization, "keyload-command-id": commandId, "content-type": "application/json" },
        payload: '{"value":1}',
      });
    await write("/v1/catalog/k", "c-1");
    await fx.app.inject({
      method: "GET",
      url: "/v1/catalog/k",
      headers: { authorization: bearer("writer") },
    });
    await write("/v1/catalog/k", "c-2", "Bearer wrong-key"); // refused at the edge: no voter call
    expect(fx.service.stagesSeen).toEqual(["data edge", "data respond"]);
  });

  it("leaves the registry when the edge closes, so another edge can register again", async () => {
    fx = httpFixture();
    const registry = fx.service.metricsRegistry;
    await fx.close();
    expect(await registry.metrics()).not.toContain("keyload_http_");
    const again = buildHttpApp({
      service: fx.service,
      httpAdmission: new HttpAdmissionGovernor(),
      logger: pino({ level: "silent" }),
    });
    expect(await registry.metrics()).toContain("keyload_http_request_duration_seconds");
    await again.close();
    fx = httpFixture();
  });
});

describe("logs", () => {
  it("writes one structured line per request naming route, status, duration, command, scope and agent", async () => {
    fx = httpFixture();
    await fx.app.inject({
      method: "PUT",
      url: "/v1/catalog/secret-customer-key",
      headers: {
        authorization: bearer("writer"),
        "keyload-command-id": "c-42",
        "content-type": "application/json",
        "user-agent": "inventory-service/2.1",
      },
      payload: '{"value":1}',
    });
    const lines = fx.logLines().filter((line) => line.msg === "request");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 20,
      method: "PUT",
      route: "/v1/catalog/{key}",
      status: 200,
      aborted: false,
      commandId: "c-42",
      tenantId: "t1",
      principalId: "w1",
      userAgent: "inventory-service/2.1",
      component: "http",
    });
    expect(typeof lines[0]?.durationMs).toBe("number");
    expect(typeof lines[0]?.reqId).toBe("string");
    expect(fx.logText()).not.toContain("secret-customer-key");
  });

  it("logs at info only the requests worth attention: a 5xx, a slow one, one whose client left", async () => {
    fx = httpFixture({ logLevel: "info", limits: { slowRequestMs: 200 } });
    const requestLines = () => fx.logLines().filter((line) => line.msg === "request");
    expect((await fx.putAsWriter('{"value":1}')).statusCode).toBe(200);
    expect((await fx.app.inject({ method: "GET", url: "/health/ready" })).statusCode).toBe(200);
    expect(requestLines()).toEqual([]);

    fx.service.onSubmit = async () => {
      throw new Error("boom");
    };
    expect((await fx.putAsWriter('{"value":1}', { "keyload-command-id": "failed" })).statusCode).toBe(500);
    expect(requestLines()).toMatchObject([{ level: 30, status: 500, commandId: "failed", aborted: false }]);

    let release = () => {};
    fx.service.onSubmit = (command) =>
      new Promise((resolve) => {
        release = () => resolve({ commandId: command.commandId, index: 11, result: {} });
        setTimeout(release, 250);
      });
    expect((await fx.putAsWriter('{"value":1}', { "keyload-command-id": "slow" })).statusCode).toBe(200);
    expect(requestLines()[1]).toMatchObject({ level: 30, status: 200, commandId: "slow" });
    expect(requestLines()[1]?.durationMs).toBeGreaterThanOrEqual(200);

    // A client that hangs up before its answer: the line says so, with no status.
    const { port } = await fx.listen();
    const socket = await open(port);
    const body = '{"value":1}';
    socket.write(
      `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("writer")}\r\n` +
        `KeyLoad-Command-Id: left\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await waitFor(() => fx.service.submitted.some((c) => c.commandId === "left"), "the write submitted");
    socket.destroy();
    await waitFor(() => requestLines().length === 3, "the hang-up's line");
    expect(requestLines()[2]).toMatchObject({ level: 30, status: null, aborted: true, commandId: "left" });
    release();
  });

  it("keeps to a budget of such lines a second under a storm of them, and says how many it moved to debug", async () => {
    fx = httpFixture({ logLevel: "info", limits: { notableRequestLinesPerSecond: 2 } });
    const requestLines = () => fx.logLines().filter((line) => line.msg === "request");
    fx.service.onSubmit = async () => {
      throw new Error("boom");
    };
    for (let i = 0; i < 5; i++) {
      expect((await fx.putAsWriter('{"value":1}', { "keyload-command-id": `storm-${i}` })).statusCode).toBe(
        500,
      );
    }
    expect(requestLines().map((line) => line.commandId)).toEqual(["storm-0", "storm-1"]);
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect((await fx.putAsWriter('{"value":1}', { "keyload-command-id": "after" })).statusCode).toBe(500);
    expect(requestLines()[2]).toMatchObject({ level: 30, commandId: "after", notableLinesAtDebug: 3 });
  });

  it("never logs the Authorization header or an API key, on any path", async () => {
    fx = httpFixture({ admission: { MaxRequestsPerPrincipal: 1 } });
    fx.service.onSubmit = async () => {
      throw new Error("boom");
    };
    const keys = [...Object.values(KEYS).map((entry) => entry.key), "kl_unknown_key_123456"];
    for (const key of keys) {
      for (const url of ["/v1/catalog/k", "/v1/admin/principals/p/keys", "/v1/nowhere", "/health/live"]) {
        await fx.app.inject({
          method: url.includes("/admin/") ? "POST" : "PUT",
          url,
          headers: {
            authorization: `Bearer ${key}`,
            "keyload-command-id": "c1",
            "content-type": "application/json",
          },
          payload: '{"value":1}',
        });
      }
      await fx.app.inject({
        method: "PUT",
        url: "/v1/catalog/k",
        headers: {
          authorization: `Bearer ${key}`,
          "keyload-command-id": "c1",
          "content-type": "application/json",
        },
        payload: '{"value":',
      });
    }
    const log = fx.logText();
    expect(log).toContain('"level":50');
    for (const key of keys) expect(log).not.toContain(key);
    expect(log.toLowerCase()).not.toContain("bearer");
    expect(log.toLowerCase()).not.toContain("authorization");
  });
});

describe("the raw connection", () => {
  it("answers a request Node cannot parse in the contract's body", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const response = await exchange(port, "THIS IS NOT HTTP\r\n\r\n");
    expectContractError(response, 400, "InvalidArgument", "MalformedRequest");
  });
});

describe("createHttpServer", () => {
  it("listens on a free port, serves, and closes", async () => {
    fx = httpFixture();
    const service = new FakeVoterService();
    const server = createHttpServer({
      service,
      httpAdmission: new HttpAdmissionGovernor(),
      logger: pino({ level: "silent" }),
      limits: { requestTimeoutMs: 10_000 },
    });
    const { host, port } = await server.listen("127.0.0.1", 0);
    expect(host).toBe("127.0.0.1");
    const response = await fetch(`http://127.0.0.1:${port}/v1/catalog/k`, {
      headers: { authorization: bearer("reader") },
    });
    expect(response.status).toBe(200);
    await server.close();
    await expect(fetch(`http://127.0.0.1:${port}/health/live`)).rejects.toThrow();
  });
});
