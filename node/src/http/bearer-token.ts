import { UnauthenticatedError } from "@keyload/contract";

const BEARER = /^Bearer +([\x21-\x7e]+) *$/i;

/**
 * The API key of an `Authorization: Bearer <apiKey>` header. The messages never repeat the header: what
 * a client put there may be a real key sent to the wrong place.
 */
export function bearerKey(header: string | undefined): string {
  if (header === undefined || header.length === 0) {
    throw new UnauthenticatedError("this route needs an Authorization: Bearer <apiKey> header", {
      reason: "MissingCredentials",
    });
  }
  const match = BEARER.exec(header);
  if (match === null) {
    throw new UnauthenticatedError("the Authorization header must be Bearer <apiKey>", {
      reason: "MalformedCredentials",
    });
  }
  return match[1]!;
}
