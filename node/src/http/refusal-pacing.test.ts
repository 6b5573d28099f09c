import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
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
 * One slot, held by a read that waits until released; then, on one connection, a write with a 32 KiB
 * body (refused: no slot) followed by a health check. When each answer arrived, in ms after sending.
 */
async function refusedWhileFull(refusalDelayMs: number) {
  fx = httpFixture({ admission: { MaxRequests: 1 }, limits: { refusalDelayMs } });
  let release = (): void => undefined;
  fx.service.onRead = (request) =>
    new Promise((resolve) => {
      release = () => resolve({ kind: request.kind });
    });
  const { port } = await fx.listen();
  const held = fetch(`http://127.0.0.1:${port}/v1/catalog/k`, {
    headers: { authorization: bearer("reader") },
  });
  await waitFor(() => fx!.service.reads.length === 1, "the held read");

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
  const slotsDuringWait = fx.governor.status().data.requests;
  socket.write("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
  await waitFor(() => arrivals.length === 2, "the health check", 5_000);
  release();
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
    // Only the held read holds a slot.
    expect(slotsDuringWait).toBe(1);
  });

  it("answers at once with no delay configured", async () => {
    const { arrivals, responses } = await refusedWhileFull(0);
    expect(responses.map((r) => r.statusCode)).toEqual([429, 200]);
    expect(arrivals[0]).toBeLessThan(250);
  });
});
