import { type ErrorCode, KeyLoadError, type KeyLoadErrorOptions } from "@keyload/contract";

export interface ClientErrorOptions extends KeyLoadErrorOptions {
  /** The voter that answered (its base URL); undefined for an error raised in the client. */
  readonly endpoint?: string;
  /** The HTTP status the voter answered with. */
  readonly httpStatus?: number;
  /** The answer's `Retry-After`, in milliseconds. */
  readonly retryAfter?: number;
}

/**
 * Base of every error the client throws for a contract error code: the contract's error (code, reason,
 * message, commandId, details) plus what the answer said beyond its body. The client binds the command
 * ID of a write to every error it throws for it, including those the voter raised before reading it.
 */
export class KeyLoadClientError extends KeyLoadError {
  readonly endpoint: string | undefined;
  /** Milliseconds the voter asked the client to wait before trying again (`Retry-After`), if it did. */
  readonly retryAfter: number | undefined;
  private readonly httpStatus: number | undefined;

  constructor(code: ErrorCode, message: string, options: ClientErrorOptions = {}) {
    super(code, message, options);
    this.endpoint = options.endpoint;
    this.retryAfter = options.retryAfter;
    this.httpStatus = options.httpStatus;
  }

  /** The status the voter answered with; the contract's status for the code when raised locally. */
  override get status(): number {
    return this.httpStatus ?? super.status;
  }
}
