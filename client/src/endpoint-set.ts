import { InvalidArgumentError } from "@keyload/contract";
import type { LeaderHint } from "./leader-hint.js";

/** A voter base URL as compared and joined with paths: origin and path, without a trailing slash. */
export function normalizeEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new InvalidArgumentError(`${endpoint} is not a URL`, { reason: "InvalidClientOption" });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidArgumentError(`${endpoint} is not an http(s) URL`, { reason: "InvalidClientOption" });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * The voters a client may ask, and the one it asks first: the last that answered, the leader a voter
 * pointed to, or the next one after a connection failure. Shared by every call of a client, so one
 * call's discovery (a dead voter, a new leader) spares the next calls the same detour.
 */
export class EndpointSet {
  private preferred = 0;

  constructor(readonly endpoints: readonly string[]) {}

  current(): string {
    return this.endpoints[this.preferred]!;
  }

  /** The endpoint after `endpoint` in the list, which becomes the preferred one. */
  failOver(endpoint: string): string {
    const index = this.endpoints.indexOf(endpoint);
    this.preferred = (index + 1) % this.endpoints.length;
    return this.current();
  }

  /** `endpoint` answered: keep asking it. */
  answered(endpoint: string): void {
    const index = this.endpoints.indexOf(endpoint);
    if (index >= 0) this.preferred = index;
  }

  /**
   * The listed endpoint a leader hint names, which becomes the preferred one; undefined when the hint
   * has no URL or names one the caller did not list. An unlisted URL is never followed: the API key
   * only goes where the caller sent it.
   */
  follow(hint: LeaderHint | undefined): string | undefined {
    if (hint?.url === undefined) return undefined;
    let url: string;
    try {
      url = normalizeEndpoint(hint.url);
    } catch {
      return undefined;
    }
    const index = this.endpoints.indexOf(url);
    if (index < 0) return undefined;
    this.preferred = index;
    return url;
  }
}
