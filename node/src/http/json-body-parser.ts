import { InternalError, InvalidArgumentError } from "@keyload/contract";
import type { FastifyRequest } from "fastify";
import { edgeOf } from "./request-edge.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The one body parser of the edge (application/json; fastify has read the body under the route's cap).
 * It keeps the body text exactly as received, which is the command's payload, and parses it only to
 * validate it: the request already holds its slot and passed authentication by now.
 */
export function parseJsonBody(
  request: FastifyRequest,
  body: Buffer,
  done: (error: Error | null, value?: unknown) => void,
): void {
  let value: unknown;
  try {
    const text = decodeUtf8(body);
    edgeOf(request).payload = text;
    value = text.length === 0 ? undefined : parseJson(text);
  } catch (error) {
    done(error instanceof Error ? error : new InternalError("the body parser failed"));
    return;
  }
  done(null, value);
}

/** Refused rather than repaired: replacing bad bytes would change the payload the command carries. */
function decodeUtf8(body: Buffer): string {
  try {
    return strictUtf8.decode(body);
  } catch {
    throw new InvalidArgumentError("the body is not valid UTF-8", { reason: "MalformedBody" });
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidArgumentError("the body is not valid JSON", { reason: "MalformedJson" });
  }
}
