/**
 * Why the transport failed: the connection could not be made (`ConnectFailed`), its TLS handshake failed,
 * most often on a certificate the client does not trust (`TlsFailed`), the voter did not answer in time
 * (`Timeout`), the connection broke during the exchange (`Interrupted`), the caller's signal aborted
 * the call (`Aborted`), undici refused the request before sending it, such as for a header it cannot
 * send (`NotSent`), the caller's streamed body threw, its error the cause (`BodyFailed`), or the
 * client was closed (`ClientClosed`).
 */
export type ConnectionFailure =
  | "ConnectFailed"
  | "TlsFailed"
  | "Timeout"
  | "Interrupted"
  | "Aborted"
  | "NotSent"
  | "BodyFailed"
  | "ClientClosed";

export interface ConnectionErrorOptions {
  readonly reason: ConnectionFailure;
  readonly endpoint: string;
  readonly commandId?: string | undefined;
  readonly cause?: unknown;
  /** Overrides what the reason implies: a close that cut an exchange short may have let its request out. */
  readonly mayHaveReachedVoter?: boolean;
}

/**
 * The failures that prove no voter got the whole request: it never left this process, or its chunked
 * body was cut off before its last chunk.
 */
const NEVER_SENT: ReadonlySet<ConnectionFailure> = new Set([
  "ConnectFailed",
  "TlsFailed",
  "NotSent",
  "BodyFailed",
  "ClientClosed",
]);

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
  /**
   * False only when no voter can have got the whole request: the connection was never made (undici
   * writes a request only once the TLS handshake has succeeded), undici refused it, the caller's body
   * stream failed before its end, or the client was closed before it was sent.
   */
  readonly mayHaveReachedVoter: boolean;

  constructor(message: string, options: ConnectionErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ConnectionError";
    this.reason = options.reason;
    this.endpoint = options.endpoint;
    this.commandId = options.commandId;
    this.mayHaveReachedVoter = options.mayHaveReachedVoter ?? !NEVER_SENT.has(options.reason);
  }
}
