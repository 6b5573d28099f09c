import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { InvalidArgumentError, type KeyLoadError, NotFoundError } from "@keyload/contract";
import { lingerOnClose } from "./lingering-close.js";
import { endAfterOpenAnswers } from "./request-observer.js";

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * What Node's HTTP server would otherwise answer itself, below fastify, with an empty body or by
 * dropping the connection: every such answer carries the contract's error body too (section 6).
 * - A request that expects `100-continue` is handed to fastify as any other. Node would send the
 *   interim answer at once, inviting the body before the request is admitted; the edge sends it only
 *   when it reads the body (`continueBody`), so a refused request's body is never sent.
 * - Any other expectation is answered 417, and the connection closed after it, lingering.
 * - `CONNECT` (no route of this API) is answered as an unknown route is, and the connection closed:
 *   Node would close it without a word.
 */
export function answerBelowFastify(server: Server, options: { readonly refusedBodyLingerMs: number }): void {
  server.on("checkContinue", (request: IncomingMessage, response: ServerResponse) => {
    server.emit("request", request, response);
  });
  server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    const expectation = String(request.headers.expect).slice(0, 100);
    const error = new InvalidArgumentError(`the expectation ${JSON.stringify(expectation)} cannot be met`, {
      reason: "UnsupportedExpectation",
    });
    lingerOnClose(request.socket, options.refusedBodyLingerMs);
    const body = JSON.stringify(error.toBody());
    response
      .writeHead(417, {
        connection: "close",
        "content-type": JSON_TYPE,
        "content-length": Buffer.byteLength(body),
      })
      .end(body);
  });
  server.on("connect", (request: IncomingMessage, socket: Socket) => {
    const target = String(request.url).slice(0, 200);
    const error = new NotFoundError(`no route matches CONNECT ${target}`, { reason: "RouteNotFound" });
    endWith(socket, "404 Not Found", error);
  });
}

/**
 * Sends `100 Continue` to a request that expects it and has not had it yet: called as its body is
 * about to be read, which is after its admission.
 */
export function continueBody(request: IncomingMessage, response: ServerResponse): void {
  const expect = request.headers.expect;
  if (expect === undefined || request.httpVersion !== "1.1" || response.headersSent) return;
  // Node's own test of the header, so that exactly the requests it handed over as `checkContinue` get it.
  if (/(?:^|\W)100-continue(?:$|\W)/i.test(expect)) response.writeContinue();
}

/**
 * Requests Node's parser rejects (malformed HTTP, oversized headers, the request timeout) never reach
 * fastify: they are answered on the raw socket, still in the contract's body, and the connection closed.
 * Unless an earlier request on the connection (pipelined) is still to be answered: a raw answer now
 * would read as that request's, a definite refusal of a write that may commit. Its answer goes first,
 * then the connection closes, and the request that could not be read gets none.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || !socket.writable) return;
  if (endAfterOpenAnswers(socket)) return;
  const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
  const answer = timedOut
    ? new InvalidArgumentError("the request did not arrive in time", { reason: "RequestTimeout" })
    : new InvalidArgumentError("the request is not valid HTTP", { reason: "MalformedRequest" });
  endWith(socket, "400 Bad Request", answer);
}

function endWith(socket: Socket, status: string, error: KeyLoadError): void {
  if (!socket.writable) return;
  const body = JSON.stringify(error.toBody());
  socket.end(
    `HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Type: ${JSON_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}
