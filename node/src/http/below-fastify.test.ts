import type { Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectContractError } from "./test-fixtures/contract-error.js";
import { bearer } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture, idleStatus } from "./test-fixtures/http-fixture.js";
import { exchange, open, parseResponse, waitFor } from "./test-fixtures/raw-http.js";

let fx: HttpFixture;
let port: number;
beforeEach(async () => {
  fx = httpFixture();
  ({ port } = await fx.listen());
});
afterEach(async () => {
  expect(fx.governor.status()).toMatchObject(idleStatus());
  await fx.close();
});

const WRITER = `Authorization: ${bearer("writer")}\r\n`;
const BODY = '{"value":1}';

function putHead(extra: string, authorization = WRITER): string {
  return (
    `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\n${authorization}KeyLoad-Command-Id: c1\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n${extra}\r\n`
  );
}

/** Everything a socket received so far, as text. */
function received(socket: Socket): () => string {
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString("utf8");
}

describe("the Host header", () => {
  it("refuses an HTTP/1.1 request without one in the contract's body", async () => {
    const response = await exchange(port, `GET /v1/catalog/k HTTP/1.1\r\n${WRITER}Connection: close\r\n\r\n`);
    expectContractError(response, 400, "InvalidArgument", "InvalidHost");
    expect(fx.service.reads).toHaveLength(0);
  });

  it("refuses two of them", async () => {
    const response = await exchange(
      port,
      `GET /v1/catalog/k HTTP/1.1\r\nHost: a\r\nHost: b\r\n${WRITER}Connection: close\r\n\r\n`,
    );
    expectContractError(response, 400, "InvalidArgument", "InvalidHost");
  });

  it("refuses a body in a transfer coding other than chunked alone, submitting nothing", async () => {
    for (const coding of ["gzip, chunked", "deflate,chunked"]) {
      const response = await exchange(
        port,
        `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\n${WRITER}KeyLoad-Command-Id: c1\r\n` +
          `Content-Type: application/json\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n`,
        `${BODY.length.toString(16)}\r\n${BODY}\r\n0\r\n\r\n`,
      );
      expectContractError(response, 400, "InvalidArgument", "UnsupportedTransferEncoding");
    }
    expect(fx.service.calls).toBe(0);
  });

  it("serves an HTTP/1.0 request without one", async () => {
    const response = await exchange(port, `GET /v1/catalog/k HTTP/1.0\r\n${WRITER}\r\n`);
    expect(response.statusCode, response.body).toBe(200);
  });
});

describe("expectations", () => {
  it("invites the body of an admitted request only once it is admitted, and serves it", async () => {
    const socket = await open(port);
    const text = received(socket);
    socket.write(putHead("Expect: 100-continue\r\n"));
    await waitFor(() => text().length > 0, "the interim answer");
    expect(text()).toBe("HTTP/1.1 100 Continue\r\n\r\n");
    socket.write(BODY);
    await waitFor(() => text().includes("\r\n\r\n{"), "the answer");
    expect(parseResponse(text().slice("HTTP/1.1 100 Continue\r\n\r\n".length)).statusCode).toBe(200);
    expect(fx.service.submitted).toHaveLength(1);
    socket.destroy();
  });

  it("answers a refused request that waits for 100 Continue at once, never inviting its body", async () => {
    const response = await exchange(
      port,
      putHead("Expect: 100-continue\r\n", "Authorization: Bearer kl_unknown\r\n"),
    );
    expectContractError(response, 401, "Unauthenticated", "InvalidCredentials");
    expect(fx.service.submitted).toHaveLength(0);
  });

  it("answers an expectation it cannot meet with 417 in the contract's body", async () => {
    const response = await exchange(port, putHead("Expect: teapot\r\n"), BODY);
    expectContractError(response, 417, "InvalidArgument", "UnsupportedExpectation");
    expect(fx.service.submitted).toHaveLength(0);
  });
});

it("answers CONNECT as an unknown route, in the contract's body", async () => {
  const response = await exchange(port, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  expectContractError(response, 404, "NotFound", "RouteNotFound");
});

it("answers a request pipelined behind a body that is not JSON", async () => {
  const socket = await open(port);
  const text = received(socket);
  const bad = '{"value":';
  socket.write(
    `PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\n${WRITER}KeyLoad-Command-Id: c1\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${bad.length}\r\n\r\n${bad}` +
      `GET /v1/catalog/k HTTP/1.1\r\nHost: x\r\n${WRITER}\r\n`,
  );
  await waitFor(() => text().split("HTTP/1.1 ").length === 3, "two answers");
  const [first, second] = text()
    .split(/(?=HTTP\/1\.1 )/)
    .map(parseResponse);
  expectContractError(first as ReturnType<typeof parseResponse>, 400, "InvalidArgument", "MalformedJson");
  expect(second?.statusCode).toBe(200);
  socket.destroy();
});

/** A connection to the edge, whose writes the voter answers `delayMs` after it takes them. */
async function slowWriteConnection(delayMs: number) {
  const submit = fx.service.onSubmit;
  fx.service.onSubmit = async (command) => {
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    return submit(command);
  };
  const socket = await open(port);
  const text = received(socket);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => undefined);
  return { socket, text, closed };
}

it("answers a write whose connection then carries a request that is not HTTP with the write's own answer", async () => {
  const { text, closed, socket } = await slowWriteConnection(100);
  socket.write(`${putHead("")}${BODY}`);
  await waitFor(() => fx.service.submitted.length === 1, "the write submitted");
  // Behind the write, while it is still to be answered.
  socket.write("NOT HTTP AT ALL\r\n\r\n");
  await closed;
  // A 400 here would read as the write's answer: a refusal of a write the voter carried out.
  const answers = text().split(/(?=HTTP\/1\.1 )/);
  expect(answers).toHaveLength(1);
  const answer = parseResponse(answers[0]!);
  expect(answer.statusCode).toBe(200);
  expect(answer.headers.connection).toBe("close");
});

it("answers a write before closing a connection whose next request ran out of time to arrive", async () => {
  await fx.close();
  fx = httpFixture({ limits: { requestTimeoutMs: 500 } });
  ({ port } = await fx.listen());
  const { text, closed, socket } = await slowWriteConnection(1_500);
  // The write, then a request whose body never comes: its time runs out while the write is owed.
  socket.write(`${putHead("")}${BODY}${putHead("").replace("c1", "c2")}`);
  await closed;
  const answers = text().split(/(?=HTTP\/1\.1 )/);
  expect(answers).toHaveLength(1);
  expect(parseResponse(answers[0]!).statusCode).toBe(200);
  expect(fx.service.submitted.map((c) => c.commandId)).toEqual(["c1"]);
}, 10_000);
