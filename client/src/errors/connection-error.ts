/**
 * Why the transport failed: the connection could not be made (`ConnectFailed`), its TLS handshake failed,
 * most often on a certificate the client does not trust (`TlsFailed`), the voter did not answer in time
 * (`Timeout`), the connection broke during the exchange (`Interrupted`), or the caller's signal aborted
 * the call (`Aborted`).
 */
export type ConnectionFailure = "ConnectFailed" | "TlsFailed" | "Timeout" | "Interrupted" | "Aborted";

export interface ConnectionErrorOptions {
  readonly reason: ConnectionFailure;
  readonly endpoint: string;
  readonly commandId?: string | undefined;
  readonly cause?: unknown;
}

/**
 * No answer came from a voter. Outside the contract's codes, since no voter said anything; a write that
 * ends with one after its request may have reached a voter is reported as UnknownWriteOutcomeError
 * instead, unless the caller aborted it.
 */
export class ConnectionError extends Error {
  readonly code = "ConnectionFailed";
  readonly reason: ConnectionFailure;
  readonly endpoint: string;
  readonly commandId: string | undefined;

  constructor(message: string, options: ConnectionErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ConnectionError";
    this.reason = options.reason;
    this.endpoint = options.endpoint;
    this.commandId = options.commandId;
  }

  /** False only when the request certainly never left this process: the connection was never made. */
  get mayHaveReachedVoter(): boolean {
    // undici writes a request only once the TLS handshake has succeeded.
    return this.reason !== "ConnectFailed" && this.reason !== "TlsFailed";
  }
}
