import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { UnknownWriteOutcomeError } from "@keyload/contract";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { HttpAdmissionGovernor } from "../admission/index.js";
import { ClosingConnections } from "./closing-connections.js";
import { createHttpServer, type HttpServer } from "./http-server.js";
import { bearer, FakeVoterService } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";
import { open, parseResponse, type RawResponse, waitFor } from "./test-fixtures/raw-http.js";

/** Far longer than any close below may take: a close that waited for it would fail the test. */
const KEEP_ALIVE_MS = 10_000;
/**
 * How soon a close must resolve once its connections' last answers are out: well under the keep-alive
 * it must not wait for, with room for a machine busy with other suites.
 */
const PROMPTLY_MS = 3_000;

const HEALTH = "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n";
const READ = `GET /v1/catalog/a HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("reader")}\r\n\r\n`;

let fx: HttpFixture | undefined;
let server: HttpServer | undefined;
let plain: Server | undefined;
let closing: Promise<void> | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await (closing ?? fx?.close() ?? server?.close());
  plain?.closeAllConnections();
  plain?.close();
  fx = undefined;
  server = undefined;
  plain = undefined;
  closing = undefined;
});

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((done, fail) => {
    resolve = done;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/**
 * One keep-alive connection, used as a client's pool uses one: a request, its answer, then the next
 * (or, pipelined, several before their answers, which arrive in order).
 */
class OneConnection {
  closed = false;
  private received = "";
  /** Who waits for the next answers, oldest first. */
  private readonly waiting: ((answer: RawResponse | undefined) => void)[] = [];

  constructor(private readonly socket: Socket) {
    sockets.push(socket);
    socket.on("data", (data: Buffer) => {
      this.received += data.toString("utf8");
      for (let answer = this.takeAnswer(); answer !== undefined; answer = this.takeAnswer()) {
        this.waiting.shift()?.(answer);
      }
    });
    socket.on("close", () => {
      this.closed = true;
      for (const waiter of this.waiting.splice(0)) waiter(undefined);
    });
    socket.on("error", () => undefined);
  }

  static async to(port: number): Promise<OneConnection> {
    return new OneConnection(await open(port));
  }

  /** Sends `request`; its answer, or undefined when the connection closed without one. */
  send(request: string): Promise<RawResponse | undefined> {
    if (this.closed || !this.socket.writable) return Promise.resolve(undefined);
    this.socket.write(request);
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Keeps sending `request` every `everyMs` (as a health poller does) until the connection closes. */
  async poll(request: string, everyMs: number, forMs: number): Promise<RawResponse[]> {
    const answers: RawResponse[] = [];
    const until = performance.now() + forMs;
    while (performance.now() < until) {
      const answer = await this.send(request);
      if (answer === undefined) break;
      answers.push(answer);
      await sleep(everyMs);
    }
    return answers;
  }

  private takeAnswer(): RawResponse | undefined {
    const headEnd = this.received.indexOf("\r\n\r\n");
    if (headEnd < 0) return undefined;
    const answer = parseResponse(this.received);
    const end = headEnd + 4 + Number(answer.headers["content-length"] ?? 0);
    if (this.received.length < end) return undefined;
    this.received = this.received.slice(end);
    return answer;
  }
}

/** When `promise` settled, in ms after `since`; undefined if it has not within `withinMs`. */
/** Listens on `fixture`, whose reads wait for the returned gate. */
async function heldReads(fixture: HttpFixture) {
  const { port } = await fixture.listen();
  const gate = deferred<void>();
  fixture.service.onRead = async () => {
    await gate.promise;
    return {};
  };
  return { port, gate };
}

async function settledAfter(promise: Promise<unknown>, since: number, withinMs: number) {
  let at: number | undefined;
  const settled = promise.then(
    () => {
      at = performance.now() - since;
    },
    () => {
      at = performance.now() - since;
    },
  );
  await Promise.race([settled, sleep(withinMs)]);
  return at;
}

describe("closing the public port under a client that keeps its connection", () => {
  it("closes a connection whose request was in flight, answering everything after the close began with Connection: close", async () => {
    fx = httpFixture({ limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS } });
    const { port, gate } = await heldReads(fx);
    const connection = await OneConnection.to(port);
    const inFlight = connection.send(READ);
    await waitFor(() => fx?.service.reads.length === 1, "the read in flight");

    const began = performance.now();
    closing = fx.app.close();
    // Past the close's sweep of idle connections: this one was busy then.
    await sleep(50);
    gate.resolve();
    const answers = [await inFlight];
    // The client keeps polling on the same connection, as the one observed did; it stops only when
    // the voter closes the connection.
    answers.push(...(await connection.poll(HEALTH, 50, 1_500)));
    const closedAfter = await settledAfter(closing, began, PROMPTLY_MS);

    expect({
      firstStatus: answers[0]?.statusCode,
      keptAlive: answers.filter((answer) => answer?.headers.connection !== "close").length,
      connectionClosed: connection.closed,
      closedPromptly: closedAfter !== undefined && closedAfter < PROMPTLY_MS,
    }).toEqual({ firstStatus: 200, keptAlive: 0, connectionClosed: true, closedPromptly: true });
  });

  it("closes a connection that sends its next request as the close begins", async () => {
    fx = httpFixture({ limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS } });
    const { port } = await fx.listen();
    const connection = await OneConnection.to(port);
    expect((await connection.send(HEALTH))?.statusCode).toBe(200);

    const began = performance.now();
    closing = fx.app.close();
    const answers = await connection.poll(HEALTH, 50, 1_500);
    const closedAfter = await settledAfter(closing, began, PROMPTLY_MS);

    for (const answer of answers) {
      expect(answer).toMatchObject({ statusCode: 503, headers: { connection: "close" } });
    }
    expect(connection.closed).toBe(true);
    expect(closedAfter).toBeLessThan(PROMPTLY_MS);
  });

  it("closes after a pipelined request's 503, answering the request in flight ahead of it first", async () => {
    fx = httpFixture({ limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS } });
    const { port, gate } = await heldReads(fx);
    let parsed = 0;
    fx.app.server.on("request", () => parsed++);
    const connection = await OneConnection.to(port);
    const first = connection.send(READ);
    await waitFor(() => fx?.service.reads.length === 1, "the read in flight");
    const began = performance.now();
    closing = fx.app.close();
    const second = connection.send(HEALTH);
    await waitFor(() => parsed === 2, "the pipelined request to arrive");
    gate.resolve();

    expect((await first)?.statusCode).toBe(200);
    expect(await second).toMatchObject({ statusCode: 503, headers: { connection: "close" } });
    await waitFor(() => connection.closed, "the connection to close");
    expect(await settledAfter(closing, began, PROMPTLY_MS)).toBeLessThan(PROMPTLY_MS);
  });

  it("answers every request pipelined before the close began, then closes the connection", async () => {
    fx = httpFixture({ limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS } });
    const { port, gate } = await heldReads(fx);
    const connection = await OneConnection.to(port);
    const first = connection.send(READ);
    const second = connection.send(READ);
    await waitFor(() => fx?.service.reads.length === 2, "both reads in flight");
    const began = performance.now();
    closing = fx.app.close();
    await sleep(50);
    gate.resolve();

    // The first answer keeps the connection for the second, under way already: a write's answer there
    // would otherwise be lost.
    expect((await first)?.statusCode).toBe(200);
    expect(await second).toMatchObject({ statusCode: 200, headers: { connection: "close" } });
    await waitFor(() => connection.closed, "the connection to close");
    expect(await settledAfter(closing, began, PROMPTLY_MS)).toBeLessThan(PROMPTLY_MS);
  });

  it("sends a refusal paced across the start of the close with Connection: close", async () => {
    fx = httpFixture({
      admission: { MaxRequestsPerPrincipal: 1 },
      limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS, refusalDelayMs: 300 },
    });
    const { port, gate } = await heldReads(fx);
    const holder = await OneConnection.to(port);
    const held = holder.send(READ);
    await waitFor(() => fx?.service.reads.length === 1, "the held read");
    // The principal's one request is taken: refused, and the refusal paced.
    const connection = await OneConnection.to(port);
    const refused = connection.send(READ);
    await sleep(50);

    const began = performance.now();
    closing = fx.app.close();
    await sleep(50);
    gate.resolve();

    expect(await held).toMatchObject({ statusCode: 200, headers: { connection: "close" } });
    expect(await refused).toMatchObject({ statusCode: 429, headers: { connection: "close" } });
    await waitFor(() => connection.closed && holder.closed, "both connections to close");
    expect(await settledAfter(closing, began, PROMPTLY_MS)).toBeLessThan(PROMPTLY_MS);
  });
});

describe("HttpServer.close", () => {
  it("answers a write the voter gives up on as it shuts down with Connection: close", async () => {
    const service = new FakeVoterService();
    server = createHttpServer({
      service,
      httpAdmission: new HttpAdmissionGovernor(),
      logger: pino({ level: "silent" }),
      limits: { keepAliveTimeoutMs: KEEP_ALIVE_MS },
    });
    const { port } = await server.listen("127.0.0.1", 0);
    const outcome = deferred<never>();
    service.onSubmit = () => outcome.promise;
    const connection = await OneConnection.to(port);
    const body = '{"value":1}';
    const answer = connection.send(
      `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer("writer")}\r\n` +
        `KeyLoad-Command-Id: c1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await waitFor(() => service.submitted.length === 1, "the write in flight");

    // As the voter shuts down: the close begins, then in the same turn its queued commands are answered.
    const began = performance.now();
    closing = server.close();
    outcome.reject(
      new UnknownWriteOutcomeError("the voter shut down before this command was replicated", {
        reason: "ShuttingDown",
      }),
    );

    expect(await answer).toMatchObject({ statusCode: 504, headers: { connection: "close" } });
    await waitFor(() => connection.closed, "the connection to close");
    expect(await settledAfter(closing, began, PROMPTLY_MS)).toBeLessThan(PROMPTLY_MS);
  });
});

describe("ClosingConnections", () => {
  it("closes a connection answered keep-alive, its head out before the close began, once the answer is done", async () => {
    const connections = new ClosingConnections();
    let finish: (() => void) | undefined;
    plain = createServer({ keepAliveTimeout: KEEP_ALIVE_MS }, (request, response) => {
      connections.closeAfter(request, response);
      response.writeHead(200, { "content-length": "2" });
      response.write("o");
      finish = () => response.end("k");
    });
    connections.watch(plain);
    const listening = plain;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const address = listening.address();
    if (address === null || typeof address === "string") throw new Error("not listening on TCP");
    const connection = await OneConnection.to(address.port);
    const answer = connection.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await waitFor(() => finish !== undefined, "the answer's head");

    const began = performance.now();
    connections.begin();
    closing = new Promise((resolve) => listening.close(() => resolve()));
    // Past Node's sweep of the connections idle as the close began: this one was busy then.
    await sleep(50);
    finish?.();

    expect(await answer).toMatchObject({ statusCode: 200, headers: { connection: "keep-alive" } });
    await waitFor(() => connection.closed, "the connection to close", PROMPTLY_MS);
    expect(await settledAfter(closing, began, PROMPTLY_MS)).toBeLessThan(PROMPTLY_MS);
  });
});
