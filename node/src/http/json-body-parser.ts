import type { IncomingMessage } from "node:http";
import { InvalidArgumentError } from "@keyload/contract";
import type { FastifyRequest } from "fastify";
import { readGuardedBody } from "./guarded-body-reader.js";
import { edgeOf } from "./request-edge.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The one body parser of the edge (application/json). It reads the body under its guard, keeps the text
 * exactly as received, which is the command's payload, and parses it only to validate it: the request
 * already holds its slot and passed authentication by now.
 */
export async function parseJsonBody(request: FastifyRequest, payload: IncomingMessage): Promise<unknown> {
  const text = decodeUtf8(await readGuardedBody(request, payload));
  edgeOf(request).payload = text;
  return text.length === 0 ? undefined : parseJson(text);
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
