import type { IncomingMessage } from "node:http";
import { InvalidArgumentError } from "@keyload/contract";
import type { FastifyRequest } from "fastify";
import { CommandPayload } from "../requests/command-payload.js";
import { readGuardedBody } from "./guarded-body-reader.js";
import { edgeOf } from "./request-edge.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The one body parser of the edge (application/json). It reads the body under its guard, keeps its bytes
 * exactly as received, which are the command's payload, and parses it only to validate it: the request
 * already holds its slot and passed authentication by now.
 */
export async function parseJsonBody(request: FastifyRequest, payload: IncomingMessage): Promise<unknown> {
  refuseOtherCharsets(request.headers["content-type"]);
  const bytes = await readGuardedBody(request, payload);
  const text = decodeUtf8(bytes);
  edgeOf(request).payload = CommandPayload.received(bytes, text.length);
  return text.length === 0 ? undefined : parseJson(text);
}

/**
 * JSON is UTF-8 (RFC 8259) and the body is decoded as such: a body declared in another charset would be
 * read as something its sender did not mean, so it is refused before a byte of it is read.
 */
function refuseOtherCharsets(contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(contentType ?? "")?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new InvalidArgumentError(`a JSON body must be UTF-8, not ${charset.slice(0, 40)}`, {
      reason: "UnsupportedContentType",
    });
  }
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
