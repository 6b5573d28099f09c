import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";
import { parseResponse, waitFor } from "./test-fixtures/raw-http.js";

const CAP = 1024;
let fx: HttpFixture | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await fx?.close();
  fx = undefined;
});

/** A chunked PUT whose first chunk already passes the data cap, answered 413; what the socket saw. */
async function refusedUpload(lingerMs?: number) {
  fx = httpFixture({
    admission: { MaxDataBodyBytes: CAP },
    ...(lingerMs === undefined ? {} : { limits: { refusedBodyLingerMs: lingerMs } }),
  });
  const { port } = await fx.listen();
  // Half-open, as a client streaming its body keeps writing after the voter's FIN until it reads the answer.
  const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  sockets.push(socket);
  await once(socket, "connect");
  const received: Buffer[] = [];
  const seen = { error: undefined as string | undefined, ended: false, closed: false };
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.on("error", (error: NodeJS.ErrnoException) => {
    seen.error = error.code;
  });
  socket.on("end", () => {
    seen.ended = true;
  });
  socket.on("close", () => {
    seen.closed = true;
  });
  socket.write(
    "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\n" +
      `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\n` +
      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
  );
  socket.write(chunk(`{"value":"${"x".repeat(2 * CAP)}`));
  const answer = () => Buffer.concat(received).toString("utf8");
  await waitFor(() => answer().includes("BodyTooLarge"), "the 413");
  return { socket, seen, answer };
}

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

describe("lingering close after a refused body", () => {
  it("reads and drops what the client still sends after the 413, so the client sees no reset", async () => {
    const { socket, seen, answer } = await refusedUpload();
    expect(parseResponse(answer())).toMatchObject({ statusCode: 413, headers: { connection: "close" } });
    // Writes after the answer, as a client streaming its body does before it reads the answer; a voter
    // that closed its socket outright would answer them with a reset.
    for (let i = 0; i < 16; i++) socket.write(chunk("y".repeat(16 * 1024)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    if (!socket.destroyed) socket.end();
    await waitFor(() => seen.closed, "the connection to close");
    expect(seen).toEqual({ error: undefined, ended: true, closed: true });
  });

  it("closes a connection whose client keeps sending once the linger has passed", async () => {
    const { socket, seen } = await refusedUpload(100);
    const started = Date.now();
    const feed = setInterval(() => {
      if (!socket.destroyed) socket.write(chunk("y".repeat(1024)));
    }, 5);
    try {
      await waitFor(() => seen.closed, "the voter to close the connection", 3_000);
    } finally {
      clearInterval(feed);
    }
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

/**
 * A PUT refused before its body is read (an unknown key), its whole body sent, then a health check on
 * the same connection; what the socket received, split into responses.
 */
async function refusedThenHealth(bodyBytes: number, drainBytes?: number) {
  fx = httpFixture(drainBytes === undefined ? {} : { limits: { refusedBodyDrainBytes: drainBytes } });
  const { port } = await fx.listen();
  const socket = connect({ port, host: "127.0.0.1" });
  sockets.push(socket);
  await once(socket, "connect");
  const received: Buffer[] = [];
  const seen = { closed: false };
  socket.on("data", (data: Buffer) => received.push(data));
  socket.on("error", () => undefined);
  socket.on("close", () => {
    seen.closed = true;
  });
  const body = JSON.stringify({ value: "x".repeat(bodyBytes - 12) });
  socket.write(
    "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-key\r\n" +
      `KeyLoad-Command-Id: c1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
  );
  socket.write(body);
  socket.write("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
  const text = () => Buffer.concat(received).toString("utf8");
  const responses = () =>
    text()
      .split(/(?=HTTP\/1\.1 \d{3} )/)
      .filter((r) => r !== "");
  await waitFor(() => seen.closed || responses().length >= 2, "two answers or a close");
  return { responses: responses().map(parseResponse), seen };
}

describe("a refused body small enough to drain", () => {
  it("is read and dropped after the answer; the connection stays open for the next request", async () => {
    const { responses, seen } = await refusedThenHealth(64 * 1024);
    expect(responses.map((r) => r.statusCode)).toEqual([401, 200]);
    expect(responses[0]!.headers.connection).not.toBe("close");
    expect(seen.closed).toBe(false);
  });

  it("closes the connection instead when the declared body is over the drain limit", async () => {
    const { responses } = await refusedThenHealth(4 * 1024, 1024);
    expect(responses).toHaveLength(1);
    expect(responses[0]).toMatchObject({ statusCode: 401, headers: { connection: "close" } });
  });
});

describe("a request pipelined behind a refusal that closes the connection", () => {
  it("is not carried out: no answer of it would reach the client", async () => {
    fx = httpFixture({ admission: { MaxDataBodyBytes: CAP }, limits: { refusalDelayMs: 0 } });
    const service = fx.service;
    const { port } = await fx.listen();
    const socket = connect({ port, host: "127.0.0.1" });
    sockets.push(socket);
    await once(socket, "connect");
    const received: Buffer[] = [];
    socket.on("data", (data: Buffer) => received.push(data));
    socket.on("error", () => undefined);
    const closed = once(socket, "close");
    const second = '{"value":2}';
    // A chunked body cut at the cap (413, the rest unread), then a write on the same connection.
    socket.write(
      "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c1\r\n` +
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
        chunk(`{"value":"${"x".repeat(2 * CAP)}"}`) +
        "0\r\n\r\n" +
        "PUT /v1/catalog/k2 HTTP/1.1\r\nHost: x\r\n" +
        `Authorization: ${bearer("writer")}\r\nKeyLoad-Command-Id: c2\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${second.length}\r\n\r\n${second}`,
    );
    await closed;
    const answer = Buffer.concat(received).toString("utf8");
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toEqual(["HTTP/1.1 413"]);
    expect(service.submitted.map((command) => command.commandId)).toEqual([]);
    await waitFor(() => fx!.governor.usage("data").requests === 0, "the slots released");
  });
});
