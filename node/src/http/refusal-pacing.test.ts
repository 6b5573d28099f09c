import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { HttpAdmissionOptions } from "../admission/index.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";
import { parseResponse, waitFor } from "./test-fixtures/raw-http.js";

let fx: HttpFixture | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await fx?.close();
  fx = undefined;
});

/**
 * A listening edge with one data slot (or the `admission` given), whose reads each wait until released
 * (`releases`, in the order they began); `read` sends one as `who`.
 */
async function heldReads(refusalDelayMs: number, admission: HttpAdmissionOptions = { MaxRequests: 1 }) {
  const http = httpFixture({ admission, limits: { refusalDelayMs } });
  fx = http;
  const releases: (() => void)[] = [];
  http.service.onRead = (request) =>
    new Promise((resolve) => {
      releases.push(() => resolve({ kind: request.kind }));
    });
  const { port } = await http.listen();
  const read = (who: "reader" | "admin" = "reader") =>
    fetch(`http://127.0.0.1:${port}/v1/catalog/k`, { headers: { authorization: bearer(who) } });
  return { http, port, read, releases };
}

/** One slot held by a read, and a second read waiting for it, with a wait far longer than the test. */
async function heldAndWaiting() {
  const { http, read, releases } = await heldReads(5_000);
  const held = read();
  await waitFor(() => http.service.reads.length === 1, "the held read");
  const waiter = read();
  await waitFor(() => http.governor.waiting("data") === 1, "the waiting read");
  return { http, releases, held, waiter };
}

/**
 * One slot, held by a read that waits until released; then, on one connection, a write with a 32 KiB
 * body (refused: no slot) followed by a health check. When each answer arrived, in ms after sending.
 */
async function refusedWhileFull(refusalDelayMs: number) {
  const { http, port, read, releases } = await heldReads(refusalDelayMs);
  const held = read();
  await waitFor(() => http.service.reads.length === 1, "the held read");

  const socket = connect({ port, host: "127.0.0.1" });
  sockets.push(socket);
  await once(socket, "connect");
  const arrivals: number[] = [];
  let text = "";
  const started = performance.now();
  socket.on("data", (data: Buffer) => {
    text += data.toString("utf8");
    const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/).filter((r) => r !== "").length;
    while (arrivals.length < answers) arrivals.push(performance.now() - started);
  });
  const body = JSON.stringify({ value: "x".repeat(32 * 1024) });
  socket.write(
    `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  await waitFor(() => arrivals.length === 1, "the refusal", 5_000);
  // Answered: the slot count shows the refusal held nothing while it waited.
  const slotsDuringWait = http.governor.status().data.requests;
  socket.write("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
  await waitFor(() => arrivals.length === 2, "the health check", 5_000);
  releases[0]!();
  await held;
  const responses = text
    .split(/(?=HTTP\/1\.1 \d{3} )/)
    .filter((r) => r !== "")
    .map(parseResponse);
  return { arrivals, responses, slotsDuringWait };
}

describe("pacing of HTTP admission refusals", () => {
  it("answers a 429 after the delay, on a connection that stays open for the next request", async () => {
    const { arrivals, responses, slotsDuringWait } = await refusedWhileFull(300);
    expect(responses.map((r) => r.statusCode)).toEqual([429, 200]);
    expect(JSON.parse(responses[0]!.body)).toMatchObject({ error: { reason: "HttpRequests" } });
    expect(responses[0]!.headers.connection).not.toBe("close");
    expect(arrivals[0]).toBeGreaterThanOrEqual(290);
    // It waited the delay for a slot, and that wait was its pacing: not the delay twice.
    expect(arrivals[0]).toBeLessThan(600);
    // Only the held read holds a slot.
    expect(slotsDuringWait).toBe(1);
  });

  it("answers at once with no delay configured", async () => {
    const { arrivals, responses } = await refusedWhileFull(0);
    expect(responses.map((r) => r.statusCode)).toEqual([429, 200]);
    expect(arrivals[0]).toBeLessThan(250);
  });

  it("gives a slot that frees during the delay to the waiting request instead of refusing it", async () => {
    const { http, releases, held: first, waiter: second } = await heldAndWaiting();
    expect(http.service.reads).toHaveLength(1);

    const released = performance.now();
    releases[0]!();
    expect((await first).status).toBe(200);
    await waitFor(() => http.service.reads.length === 2, "the second read", 2_000);
    releases[1]!();
    expect((await second).status).toBe(200);
    // Well before its 5 s wait would have run out.
    expect(performance.now() - released).toBeLessThan(2_000);
    expect(http.governor.usage("data").requests).toBe(0);
  });

  it("takes no slot for a request whose connection closes while it waits", async () => {
    const { http, port, read, releases } = await heldReads(5_000);
    const held = read();
    await waitFor(() => http.service.reads.length === 1, "the held read");
    const socket = connect({ port, host: "127.0.0.1" });
    sockets.push(socket);
    await once(socket, "connect");
    socket.write(`GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("reader")}\r\n\r\n`);
    await waitFor(() => http.governor.waiting("data") === 1, "the waiting read");
    socket.destroy();
    await waitFor(() => http.governor.waiting("data") === 0, "the wait cancelled");
    releases[0]!();
    expect((await held).status).toBe(200);
    await waitFor(() => http.governor.usage("data").requests === 0, "no slot held");
    expect(http.service.reads).toHaveLength(1);
  });

  it("answers a request that got its slot after shutdown began with 503, doing nothing for it", async () => {
    const { http, releases, held, waiter } = await heldAndWaiting();

    const closing = http.app.close();
    releases[0]!();
    expect((await held).status).toBe(200);
    const refused = await waiter;
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: "Unavailable", reason: "ShuttingDown" } });
    await closing;
    expect(http.service.reads).toHaveLength(1);
    expect(http.governor.usage("data").requests).toBe(0);
  });

  it("still paces a principal's refusal that came after a short wait for a slot", async () => {
    const { http, read, releases } = await heldReads(600, { MaxRequests: 2, MaxRequestsPerPrincipal: 1 });
    const mine = read("reader");
    await waitFor(() => http.service.reads.length === 1, "the reader's read");
    const other = read("admin");
    await waitFor(() => http.service.reads.length === 2, "the admin's read");
    const sent = performance.now();
    const again = read("reader");
    await waitFor(() => http.governor.waiting("data") === 1, "the reader's second read waiting");

    // A slot frees at once; the second read takes it, and its principal's cap refuses it.
    releases[1]!();
    expect((await other).status).toBe(200);
    const refused = await again;
    const elapsed = performance.now() - sent;
    releases[0]!();
    expect((await mine).status).toBe(200);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { reason: "PrincipalRequests" } });
    expect(elapsed).toBeGreaterThanOrEqual(590);
  });
});
