import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { JsonText } from "../requests/json-text.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";
import { open, parseResponse, waitFor } from "./test-fixtures/raw-http.js";

let fx: HttpFixture | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await fx?.close();
  fx = undefined;
});

/** The value of an unlabelled series in the fixture's `/metrics`, read without a connection. */
async function metric(name: string): Promise<number> {
  const headers = { authorization: bearer("reader") };
  const text = (await fx!.app.inject({ method: "GET", url: "/metrics", headers })).body;
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

/** A connection, and whether the server has closed it and what it sent before. */
async function connect(
  port: number,
): Promise<{ socket: Socket; received: () => string; closed: () => boolean }> {
  const socket = await open(port);
  sockets.push(socket);
  let received = "";
  let closed = false;
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("utf8");
  });
  socket.on("close", () => {
    closed = true;
  });
  socket.on("error", () => undefined);
  return { socket, received: () => received, closed: () => closed };
}

const LIVE = "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n";

describe("the HTTP connection cap", () => {
  it("closes a connection past MaxHttp at once, counts it, and accepts one again once another closed", async () => {
    fx = httpFixture({ limits: { maxConnections: 2 } });
    const { port } = await fx.listen();
    const first = await connect(port);
    const second = await connect(port);
    // Both are served: each answers a request, kept alive.
    for (const c of [first, second]) {
      c.socket.write(LIVE);
      await waitFor(() => c.received().includes("\r\n\r\n"), "an answer");
      expect(parseResponse(c.received()).statusCode).toBe(200);
    }
    expect(await metric("keyload_http_connections")).toBe(2);
    expect(await metric("keyload_http_connections_refused_total")).toBe(0);

    const third = await connect(port);
    third.socket.write(LIVE);
    await waitFor(third.closed, "the third connection closed by the voter");
    expect(third.received()).toBe("");
    expect(await metric("keyload_http_connections_refused_total")).toBe(1);
    expect(await metric("keyload_http_connections")).toBe(2);
    expect(first.closed() || second.closed()).toBe(false);

    first.socket.destroy();
    const deadline = Date.now() + 5000;
    while ((await metric("keyload_http_connections")) !== 1) {
      if (Date.now() > deadline) throw new Error("the voter never saw the first connection closed");
      await sleep(5);
    }
    const fourth = await connect(port);
    fourth.socket.write(LIVE);
    await waitFor(() => fourth.received().includes("\r\n\r\n"), "an answer on a new connection");
    expect(parseResponse(fourth.received()).statusCode).toBe(200);
    expect(await metric("keyload_http_connections")).toBe(2);
    expect(await metric("keyload_http_connections_refused_total")).toBe(1);
  });
});

describe("an answer its client stops reading", () => {
  it("ends its connection and frees its HTTP slot, while a client that reads gets the same answer", async () => {
    fx = httpFixture({
      admission: { MaxRequests: 2 },
      limits: { requestTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 },
    });
    // Far more than the socket buffers hold on both sides, so the write stalls.
    const big = new JsonText(JSON.stringify({ v: "x".repeat(32 * 1024 * 1024) }));
    fx.service.onRead = async () => big;
    const { port, url } = await fx.listen();
    const closed: boolean[] = [];
    for (const who of ["writer", "reader"] as const) {
      const socket = await open(port);
      sockets.push(socket);
      socket.on("error", () => undefined);
      const index = closed.push(false) - 1;
      socket.on("close", () => {
        closed[index] = true;
      });
      socket.pause();
      socket.write(`GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer(who)}\r\n\r\n`);
    }
    const governor = fx.governor;
    await waitFor(() => governor.usage("data").requests === 2, "both answers under way", 2_000);
    // No write progress for half the request timeout, at most the whole of it, ends each connection.
    await waitFor(() => governor.usage("data").requests === 0, "both slots freed", 4_000);
    // The clients, reading again, find their connections gone.
    for (const socket of sockets) socket.resume();
    await waitFor(() => closed.every(Boolean), "both connections closed", 2_000);
    const answer = await fetch(`${url}/v1/catalog/k`, { headers: { authorization: bearer("reader") } });
    expect(answer.status).toBe(200);
    expect((await answer.text()).length).toBeGreaterThan(32 * 1024 * 1024);
  }, 20_000);
});
