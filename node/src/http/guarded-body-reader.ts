import type { IncomingMessage } from "node:http";
import {
  InternalError,
  InvalidArgumentError,
  type KeyLoadError,
  ResourceExhaustedError,
} from "@keyload/contract";
import type { FastifyRequest } from "fastify";
import { BodyGuard } from "../admission/index.js";
import { declaredLength } from "./edge-gate.js";
import { edgeOf } from "./request-edge.js";

/**
 * Reads a request body under a `BodyGuard` sized to what the request's HTTP reservation accounted for,
 * the one place the edge counts body bytes and cuts a body. The first hook has already refused a
 * declared length over the cap; here a chunked body is cut as soon as it passes the route's cap, and the
 * rest of it is never buffered.
 */
export function readGuardedBody(request: FastifyRequest, payload: IncomingMessage): Promise<Buffer> {
  const edge = edgeOf(request);
  const { route, reservation } = edge;
  if (route === undefined || route.type === "ops" || reservation === undefined)
    return Promise.reject(new InternalError("a body was read outside an admitted API route"));
  const { bodyCap } = route;
  const declared = declaredLength(request.headers);
  const guard = new BodyGuard(reservation.pool, reservation.admittedBodyBytes);

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const stop = (): void => {
      payload.removeListener("data", onData);
      payload.removeListener("end", onEnd);
      payload.removeListener("error", onError);
    };
    function onData(chunk: Buffer): void {
      try {
        guard.count(chunk.byteLength);
      } catch (error) {
        // The stream is left flowing with no listener, so what the client still sends is discarded
        // until the answer (which closes the connection) is written; destroying it would lose the answer.
        stop();
        reject(error instanceof ResourceExhaustedError ? cut(guard, declared, bodyCap) : error);
        return;
      }
      chunks.push(chunk);
    }
    function onEnd(): void {
      stop();
      if (declared !== undefined && guard.bytesRead !== declared) reject(lengthMismatch());
      else resolve(Buffer.concat(chunks, guard.bytesRead));
    }
    function onError(): void {
      // Node fails the request stream only when the connection goes before the body is complete.
      stop();
      reject(
        new InvalidArgumentError("the client closed the connection while sending the request", {
          reason: "RequestAborted",
        }),
      );
    }
    payload.on("data", onData);
    payload.on("end", onEnd);
    payload.on("error", onError);
    payload.resume();
  });
}

/**
 * The answer to a body the guard cut. A declared length was already checked against the cap, so a body
 * longer than its own Content-Length is malformed rather than too large. A chunked body's guard stands
 * at the route's cap; the answer names that cap but not the bytes read when it was cut, which depend on
 * how the client's chunks happened to arrive.
 */
function cut(guard: BodyGuard, declared: number | undefined, bodyCap: string): KeyLoadError {
  if (declared !== undefined) return lengthMismatch();
  return new ResourceExhaustedError(
    "BodyTooLarge",
    `the body passed the route's cap of ${guard.limitBytes} bytes (${bodyCap}) while it was read`,
    { governor: "http", pool: guard.pool, limit: bodyCap, limitValue: guard.limitBytes },
  );
}

function lengthMismatch(): KeyLoadError {
  return new InvalidArgumentError("the body's length differs from its Content-Length", {
    reason: "InvalidContentLength",
  });
}
