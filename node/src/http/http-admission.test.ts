import { request as httpRequest } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { InjectOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { expectContractError } from "./test-fixtures/contract-error.js";
import { bearer, KEYS } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture, idleStatus } from "./test-fixtures/http-fixture.js";
import { collect, exchange, open, parseResponse, waitFor } from "./test-fixtures/raw-http.js";

const MiB = 1024 * 1024;

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

let fx: HttpFixture;
afterEach(async () => {
  await waitFor(
    () => fx.governor.usage("data").requests + fx.governor.usage("control").requests === 0,
    "idle",
  );
  expect(fx.governor.status()).toMatchObject(idleStatus());
  await fx.close();
});

const readCatalog = (who: keyof typeof KEYS = "reader"): InjectOptions => ({
  method: "GET",
  url: "/v1/catalog/k",
  headers: { authorization: bearer(who) },
});

/** Holds every read until `release` is called; resolves `started` for each read that began. */
function holdReads(fixture: HttpFixture) {
  const gate = deferred<void>();
  fixture.service.onRead = async (request) => {
    await gate.promise;
    return { kind: request.kind };
  };
  return { release: () => gate.resolve() };
}

describe("HTTP admission at the edge", () => {
  it("refuses a request past the pool's slots with 429 and Retry-After, before authenticating it", async () => {
    fx = httpFixture({ admission: { MaxRequests: 1 } });
    const held = holdReads(fx);
    const first = fx.app.inject(readCatalog());
    await waitFor(() => fx.service.reads.length === 1, "the first read");
    const authentications = fx.service.authentications;

    const refused = await fx.app.inject({
      ...readCatalog(),
      headers: { authorization: "Bearer not-even-a-key" },
    });
    const error = expectContractError(refused, 429, "ResourceExhausted", "HttpRequests");
    expect(refused.headers["retry-after"]).toBe("1");
    expect(error.details).toMatchObject({
      governor: "http",
      pool: "data",
      limit: "MaxRequests",
      limitValue: 1,
    });
    expect(fx.service.authentications).toBe(authentications);
    expect(fx.service.reads).toHaveLength(1);

    held.release();
    expect((await first).statusCode).toBe(200);
  });

  it("refuses by modeled bytes: heavy reads share the data pool", async () => {
    // Room for one heavy read (64 MiB + 4 KiB) and not two.
    fx = httpFixture({ admission: { MaxModeledBytes: 100 * MiB } });
    const held = holdReads(fx);
    const heavy = (url: string): InjectOptions => ({
      method: "POST",
      url,
      headers: { authorization: bearer("reader"), "content-type": "application/json" },
      payload: '{"query":"a","keys":["a"],"start":"a"}',
    });
    const first = fx.app.inject(heavy("/v1/search"));
    await waitFor(() => fx.service.reads.length === 1, "the first heavy read");
    const refused = await fx.app.inject(heavy("/v1/catalog/bulk-get"));
    expectContractError(refused, 429, "ResourceExhausted", "HttpBytes");
    // A plain data request still fits.
    const light = fx.app.inject(readCatalog());
    await waitFor(() => fx.service.reads.length === 2, "the light read");
    held.release();
    expect((await first).statusCode).toBe(200);
    expect((await light).statusCode).toBe(200);
  });

  it("binds tenant and principal after the key: a busy principal is refused, others pass", async () => {
    fx = httpFixture({ admission: { MaxRequestsPerPrincipal: 1, MaxRequestsPerTenant: 2 } });
    const held = holdReads(fx);
    const first = fx.app.inject(readCatalog("reader"));
    await waitFor(() => fx.service.reads.length === 1, "the first read");

    const samePrincipal = await fx.app.inject(readCatalog("reader"));
    const error = expectContractError(samePrincipal, 429, "ResourceExhausted", "PrincipalRequests");
    expect(samePrincipal.headers["retry-after"]).toBe("1");
    expect(error.details).toMatchObject({ governor: "http", pool: "data", limit: "MaxRequestsPerPrincipal" });
    // Refused with everything released: the pool holds only the first request.
    expect(fx.governor.usage("data").requests).toBe(1);

    const sameTenant = fx.app.inject(readCatalog("writer"));
    await waitFor(() => fx.service.reads.length === 2, "the same tenant's other principal");
    const tenantFull = await fx.app.inject({
      ...readCatalog(),
      headers: { authorization: bearer("writer") },
      url: "/v1/catalog/other",
    });
    expectContractError(tenantFull, 429, "ResourceExhausted", "TenantRequests");
    const otherTenant = fx.app.inject(readCatalog("otherWriter"));
    await waitFor(() => fx.service.reads.length === 3, "another tenant's read");

    expect(fx.governor.status().verifiedScopes).toEqual([
      { pool: "data", tenantId: "t1", principalId: "r1", tenantRequests: 2, principalRequests: 1 },
      { pool: "data", tenantId: "t1", principalId: "w1", tenantRequests: 2, principalRequests: 1 },
      { pool: "data", tenantId: "t2", principalId: "w2", tenantRequests: 1, principalRequests: 1 },
    ]);
    held.release();
    for (const pending of [first, sameTenant, otherTenant]) expect((await pending).statusCode).toBe(200);
  });

  it("keeps the control pool independent of a full data pool", async () => {
    fx = httpFixture({ admission: { MaxRequests: 1 } });
    const held = holdReads(fx);
    const first = fx.app.inject(readCatalog());
    await waitFor(() => fx.service.reads.length === 1, "the data read");
    const control = await fx.app.inject({
      method: "POST",
      url: "/v1/queues/q/leases",
      headers: { authorization: bearer("writer"), "keyload-command-id": "c1" },
    });
    expect(control.statusCode).toBe(200);
    held.release();
    await first;
  });

  it("accounts a declared body and the verified scope while the voter works", async () => {
    fx = httpFixture();
    const seen: unknown[] = [];
    fx.service.onSubmit = async (command) => {
      seen.push(fx.governor.status());
      return { commandId: command.commandId, index: 1, result: {} };
    };
    const payload = '{"value":"0123456789"}';
    await fx.putAsWriter(payload);
    expect(seen[0]).toMatchObject({
      data: { requests: 1, modeledBytes: 8 * MiB + 4 * payload.length + 4096 },
      ingress: { data: 0, control: 0 },
      verifiedScopes: [
        { pool: "data", tenantId: "t1", principalId: "w1", tenantRequests: 1, principalRequests: 1 },
      ],
    });
  });

  it("holds the status request's own slot while it is answered", async () => {
    fx = httpFixture();
    fx.service.onRead = async () => fx.governor.status();
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/admin/admission",
      headers: { authorization: bearer("admin") },
    });
    expect(response.json()).toMatchObject({
      data: { requests: 1, modeledBytes: 8392704 },
      verifiedScopes: [{ pool: "data", tenantId: "system", principalId: "admin" }],
    });
  });
});

describe("body caps", () => {
  it("refuses a declared body over the cap with 413 before reading it or calling the voter", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const response = await exchange(
      port,
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: ${8 * MiB + 1}\r\n\r\n`,
    );
    const error = expectContractError(response, 413, "ResourceExhausted", "BodyTooLarge");
    expect(error.details).toMatchObject({
      governor: "http",
      pool: "data",
      limit: "MaxDataBodyBytes",
      limitValue: 8 * MiB,
      requested: 8 * MiB + 1,
    });
    expect(response.headers["retry-after"]).toBeUndefined();
    expect(response.headers.connection).toBe("close");
    expect(fx.service.authentications).toBe(0);
    expect(fx.service.calls).toBe(0);
    expect(fx.governor.status()).toMatchObject(idleStatus());
  });

  it("cuts a request whose body trickles in at its time to arrive, and frees its slot", async () => {
    fx = httpFixture({ limits: { requestTimeoutMs: 1_000 } });
    const { port } = await fx.listen();
    const socket = await open(port);
    const { closed, received } = collect(socket);
    const started = Date.now();
    socket.write(
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: 1000\r\n\r\n`,
    );
    // One byte every 100 ms: never idle, never done.
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write("x");
    }, 100);
    try {
      await waitFor(() => fx.governor.status().data.requests === 1, "the request's slot");
      await Promise.race([closed, sleep(8_000)]);
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(4_000);
    expectContractError(received(), 400, "InvalidArgument", "RequestTimeout");
    await waitFor(() => fx.governor.status().data.requests === 0, "the slot's release");
    expect(fx.service.calls).toBe(0);
  }, 15_000);

  it("refuses with 413 a declared length past what a double holds exactly", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    for (const declared of ["9007199254740993", "18446744073709551615"]) {
      const response = await exchange(
        port,
        "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: ${declared}\r\n\r\n`,
      );
      const error = expectContractError(response, 413, "ResourceExhausted", "BodyTooLarge");
      expect(error.details).toMatchObject({ governor: "http", pool: "data", limitValue: 8 * MiB });
    }
    expect(fx.service.calls).toBe(0);
    expect(fx.governor.status()).toMatchObject(idleStatus());
  });

  it("refuses a declared control body over 64 KiB", async () => {
    fx = httpFixture();
    const response = await fx.app.inject({
      method: "POST",
      url: "/v1/dispatch/ops",
      headers: {
        authorization: bearer("writer"),
        "keyload-command-id": "c1",
        "content-type": "application/json",
      },
      payload: JSON.stringify({ directive: "d", data: "x".repeat(64 * 1024) }),
    });
    const error = expectContractError(response, 413, "ResourceExhausted", "BodyTooLarge");
    expect(error.details).toMatchObject({ pool: "control", limit: "MaxControlBodyBytes", limitValue: 65536 });
    expect(fx.service.calls).toBe(0);
  });

  it("counts a chunked body while reading and cuts it at the cap with 413", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const chunk = Buffer.alloc(16 * 1024, "x");
    const total = 16 * MiB;
    let written = 0;
    let writtenAtAnswer = -1;
    const answer = new Promise<{ status: number; body: string; headers: Record<string, unknown> }>(
      (resolve, reject) => {
        const request = httpRequest(
          {
            port,
            host: "127.0.0.1",
            method: "POST",
            path: "/v1/dispatch/ops",
            headers: {
              authorization: bearer("writer"),
              "keyload-command-id": "c1",
              "content-type": "application/json",
              "transfer-encoding": "chunked",
            },
          },
          (response) => {
            writtenAtAnswer = written;
            let body = "";
            response.on("data", (data: Buffer) => {
              body += data.toString("utf8");
            });
            response.on("end", () =>
              resolve({ status: response.statusCode ?? 0, body, headers: response.headers }),
            );
          },
        );
        request.on("error", () => undefined);
        const pump = (): void => {
          while (written < total && writtenAtAnswer < 0 && !request.destroyed) {
            written += chunk.length;
            if (!request.write(chunk)) {
              request.once("drain", pump);
              return;
            }
          }
          if (written >= total) request.end();
        };
        pump();
        setTimeout(() => reject(new Error("no answer")), 10_000).unref();
      },
    );
    const { status, body, headers } = await answer;
    const error = expectContractError(
      { statusCode: status, body, headers },
      413,
      "ResourceExhausted",
      "BodyTooLarge",
    );
    expect(error.details).toEqual({
      governor: "http",
      pool: "control",
      limit: "MaxControlBodyBytes",
      limitValue: 64 * 1024,
    });
    expect(headers.connection).toBe("close");
    // Answered while the client was still sending: the rest of the body was never read.
    expect(writtenAtAnswer).toBeGreaterThan(0);
    expect(writtenAtAnswer).toBeLessThan(total);
    expect(fx.service.calls).toBe(0);
    const chunked = fx.governor.status();
    expect(chunked.control.requests).toBe(0);
  });

  it("cuts a chunked data body at the configured MaxDataBodyBytes", async () => {
    fx = httpFixture({ admission: { MaxDataBodyBytes: 1024 } });
    const { port } = await fx.listen();
    const chunk = `{"value":"${"x".repeat(600)}`;
    const response = await exchange(
      port,
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nTransfer-Encoding: chunked\r\n\r\n`,
      `${chunk.length.toString(16)}\r\n${chunk}\r\n`.repeat(2),
    );
    const error = expectContractError(response, 413, "ResourceExhausted", "BodyTooLarge");
    expect(error.details).toEqual({
      governor: "http",
      pool: "data",
      limit: "MaxDataBodyBytes",
      limitValue: 1024,
    });
    expect(response.headers.connection).toBe("close");
    expect(fx.service.calls).toBe(0);
  });

  it("answers a body longer or shorter than its Content-Length with 400, submitting nothing", async () => {
    fx = httpFixture();
    const payload = '{"value":"0123456789"}';
    for (const declared of [5, payload.length + 10]) {
      const response = await fx.putAsWriter(payload, { "content-length": String(declared) });
      expectContractError(response, 400, "InvalidArgument", "InvalidContentLength");
    }
    expect(fx.service.calls).toBe(0);
  });

  it("reserves the route's cap for a chunked body and passes one under the cap", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    let usage: unknown;
    fx.service.onSubmit = async (command) => {
      usage = fx.governor.usage("data");
      return { commandId: command.commandId, index: 4, result: { key: "k", version: 1 } };
    };
    const text = '{"value":"chunked"}';
    const response = await exchange(
      port,
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nTransfer-Encoding: chunked\r\n\r\n`,
      `${(10).toString(16)}\r\n${text.slice(0, 10)}\r\n${(text.length - 10).toString(16)}\r\n${text.slice(10)}\r\n0\r\n\r\n`,
    );
    expect(response.statusCode).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ commandId: "c1", key: "k", version: 1 });
    expect(fx.service.submitted[0]?.payload.text()).toBe(text);
    expect(usage).toEqual({ requests: 1, modeledBytes: 8 * MiB + 4 * 8 * MiB + 4096 });
  });
});

describe("the slot lasts until the response is over", () => {
  it("is released when the client hangs up mid-body, and nothing is submitted", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const socket = await open(port);
    socket.write(
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: 1000\r\n\r\n{"value":`,
    );
    await waitFor(() => fx.governor.usage("data").requests === 1, "the slot to be held");
    expect(fx.governor.status().verifiedScopes).toHaveLength(1);
    socket.destroy();
    await waitFor(() => fx.governor.usage("data").requests === 0, "the slot to be released");
    expect(fx.service.calls).toBe(0);
    expect(fx.logLines().filter((line) => Number(line.level) >= 50)).toEqual([]);
  });

  it("is released when the client hangs up mid-response", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    fx.service.onRead = async () => ({ blob: "y".repeat(32 * MiB) });
    const socket = await open(port);
    const firstBytes = new Promise<void>((resolve) => socket.once("data", () => resolve()));
    socket.pause();
    socket.write(`GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("reader")}\r\n\r\n`);
    socket.resume();
    await firstBytes;
    socket.pause();
    expect(fx.governor.usage("data").requests).toBe(1);
    socket.destroy();
    await waitFor(() => fx.governor.usage("data").requests === 0, "the slot to be released");
  });

  it("is released for requests pipelined behind one whose key is unknown, the connection closed", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const lookup = deferred<void>();
    fx.service.catchUp = () => lookup.promise;
    const socket = await open(port);
    socket.write(
      `GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer kl_nobody\r\n\r\n`.repeat(4),
    );
    await waitFor(() => fx.governor.status().ingress.data === 4, "four slots under the ingress scope");
    socket.destroy();
    lookup.resolve();
    await waitFor(() => fx.governor.usage("data").requests === 0, "every slot to be released");
  });

  it("aborts the voter's signal when the client leaves, and holds the slot until the voter is done", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const gate = deferred<void>();
    let signal: AbortSignal | undefined;
    fx.service.onSubmit = async (command) => {
      signal = command.signal;
      await gate.promise;
      return { commandId: command.commandId, index: 1, result: {} };
    };
    const socket = await open(port);
    const text = '{"value":1}';
    socket.write(
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: ${text.length}\r\n\r\n${text}`,
    );
    await waitFor(() => signal !== undefined, "the command to be submitted");
    expect(signal?.aborted).toBe(false);
    socket.destroy();
    await waitFor(() => signal?.aborted === true, "the signal to abort");
    expect(fx.governor.usage("data").requests).toBe(1);
    gate.resolve();
    await waitFor(() => fx.governor.usage("data").requests === 0, "the slot to be released");
  });

  describe("a client that leaves while its key is looked up runs nothing", () => {
    // Its slot is released when it leaves: a route that ran after that would hold none.
    for (const [name, requestLine, rest] of [
      ["a write without a body", "DELETE /v1/catalog/k HTTP/1.1", "\r\n"],
      [
        "a write with a body",
        "PUT /v1/catalog/k HTTP/1.1",
        'Content-Type: application/json\r\nContent-Length: 11\r\n\r\n{"value":1}',
      ],
    ] as const) {
      it(name, async () => {
        fx = httpFixture({ admission: { MaxRequests: 1 } });
        let routed = 0;
        fx.app.addHook("preParsing", async () => {
          routed++;
        });
        fx.app.addHook("preHandler", async () => {
          routed++;
        });
        fx.app.addHook("onError", async () => {
          routed++;
        });
        const { port } = await fx.listen();
        fx.service.keysAfterCatchUp.set("kl_created_elsewhere", KEYS.writer.identity);
        const lookup = deferred<void>();
        const catchUp = fx.service.catchUp.bind(fx.service);
        let lookups = 0;
        fx.service.catchUp = async () => {
          lookups++;
          await lookup.promise;
          return catchUp();
        };
        for (let i = 0; i < 3; i++) {
          const socket = await open(port);
          socket.write(
            `${requestLine}\r\nHost: x\r\nAuthorization: Bearer kl_created_elsewhere\r\n` +
              `KeyLoad-Command-Id: c${i}\r\n${rest}`,
          );
          await waitFor(() => lookups === i + 1, "the key's lookup");
          socket.destroy();
          await waitFor(() => fx.governor.usage("data").requests === 0, "the slot to be released");
        }
        lookup.resolve();
        await waitFor(() => fx.service.catchUps === 3, "the lookups to end");
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect({ submitted: fx.service.submitted.length, routed }).toEqual({ submitted: 0, routed: 0 });
      });
    }
  });

  it("keeps the signal quiet for a client that waits for its answer", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    fx.service.onSubmit = async (command) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return { commandId: command.commandId, index: 1, result: { aborted: command.signal.aborted } };
    };
    const text = '{"value":1}';
    const response = await exchange(
      port,
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\nContent-Length: ${text.length}\r\n\r\n`,
      text,
    );
    expect(JSON.parse(response.body)).toEqual({ commandId: "c1", aborted: false });
  });

  it("answers requests on open connections with 503 while shutting down", async () => {
    fx = httpFixture();
    const { port } = await fx.listen();
    const gate = deferred<void>();
    fx.service.onRead = async () => {
      await gate.promise;
      return {};
    };
    let parsed = 0;
    fx.app.server.on("request", () => parsed++);
    const socket = await open(port);
    const received: Buffer[] = [];
    socket.on("data", (data: Buffer) => received.push(data));
    const socketClosed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(`GET /v1/catalog/a HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("reader")}\r\n\r\n`);
    await waitFor(() => fx.service.reads.length === 1, "the first read");
    const closing = fx.app.close();
    // Pipelined behind the read in flight: it arrives while the server drains.
    socket.write(`GET /v1/catalog/b HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("reader")}\r\n\r\n`);
    await waitFor(() => parsed === 2, "the pipelined request to arrive");
    gate.resolve();
    await closing;
    await socketClosed;
    const raw = Buffer.concat(received).toString("utf8");
    const second = raw.slice(raw.indexOf("HTTP/1.1", 10));
    expect(parseResponse(raw).statusCode).toBe(200);
    expectContractError(parseResponse(second), 503, "Unavailable", "ShuttingDown");
    expect(fx.service.reads).toHaveLength(1);
  });
});
