import type { Governor, Lane } from "@keyload/contract";
import { type ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";

/** Which governor refused: the voter's command or HTTP admission, or this client's adaptive throttle. */
export type ClientGovernor = Governor | "client";

function laneOf(value: unknown): Lane | undefined {
  return value === "data" || value === "control" ? value : undefined;
}

function governorOf(value: unknown): ClientGovernor | undefined {
  return value === "command" || value === "http" || value === "client" ? value : undefined;
}

/**
 * Admission refused the request (429 with `Retry-After`, or 413 `BodyTooLarge`), or the client's adaptive
 * throttle did (governor `client`, reason `ClientThrottled`). `reason` is one of the contract's
 * ResourceExhaustedReason values otherwise. A refused write did not take its command ID: it may be sent
 * again, with the same or another body.
 */
export class ResourceExhaustedError extends KeyLoadClientError {
  readonly governor: ClientGovernor | undefined;
  /** The command lane that refused (command governor). */
  readonly lane: Lane | undefined;
  /** The HTTP pool that refused (HTTP governor). */
  readonly pool: Lane | undefined;

  constructor(message: string, options: ClientErrorOptions = {}) {
    super("ResourceExhausted", message, options);
    this.governor = governorOf(options.details?.governor);
    this.lane = laneOf(options.details?.lane);
    this.pool = laneOf(options.details?.pool);
  }
}
