import { RawRequest } from "./raw-request.js";

/**
 * Holds one slot of a voter's public HTTP data pool: a catalog put whose head declares a body that never
 * comes. The voter reserves the slot, and binds it to the key's principal, before it reads a body byte,
 * and keeps it until the request ends; `close()` on the returned request hangs up and so releases it.
 * The voter's request timeout (30 s) ends such a request too, so a test holds one for less than that.
 * `name` is the put's key and command ID both: `[A-Za-z0-9._:-]` only.
 */
export function holdDataSlot(httpUrl: string, apiKey: string, name: string): RawRequest {
  return RawRequest.send(httpUrl, {
    method: "PUT",
    path: `/v1/catalog/${encodeURIComponent(name)}`,
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/json",
      "content-length": "64",
      "keyload-command-id": name,
    },
  });
}

/** Hangs up every request of `held`. */
export function closeAll(held: readonly RawRequest[]): void {
  for (const request of held) request.close();
}
