import {
  ERROR_STATUS,
  type ErrorBody,
  type ErrorCode,
  type ResourceExhaustedDetails,
  type ResourceExhaustedReason,
} from "./error-codes.js";

export interface KeyLoadErrorOptions {
  readonly reason?: string;
  readonly commandId?: string;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly cause?: unknown;
}

/** Base of every typed error that maps onto the contract's error body. */
export class KeyLoadError extends Error {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly commandId: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: ErrorCode, message: string, options: KeyLoadErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.reason = options.reason ?? code;
    this.commandId = options.commandId;
    this.details = options.details;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  /** The same error bound to a command ID (errors are raised before the ID is always known). */
  withCommandId(commandId: string): this {
    const copy = Object.create(Object.getPrototypeOf(this)) as this;
    Object.assign(copy, this, { commandId, message: this.message, stack: this.stack });
    return copy;
  }

  toBody(): ErrorBody {
    return {
      error: {
        code: this.code,
        reason: this.reason,
        message: this.message,
        ...(this.commandId === undefined ? {} : { commandId: this.commandId }),
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}

export class ResourceExhaustedError extends KeyLoadError {
  declare readonly reason: ResourceExhaustedReason;
  declare readonly details: ResourceExhaustedDetails;
  /** Seconds the caller should wait (the `Retry-After` header); absent for BodyTooLarge. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    reason: ResourceExhaustedReason,
    message: string,
    details: ResourceExhaustedDetails,
    options: { commandId?: string; retryAfterSeconds?: number } = {},
  ) {
    super("ResourceExhausted", message, {
      reason,
      details,
      ...(options.commandId ? { commandId: options.commandId } : {}),
    });
    this.retryAfterSeconds = reason === "BodyTooLarge" ? undefined : (options.retryAfterSeconds ?? 1);
  }

  /** 413 for a body over the route cap, 429 for everything else. */
  override get status(): number {
    return this.reason === "BodyTooLarge" ? 413 : 429;
  }
}

export class UnknownWriteOutcomeError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("UnknownWriteOutcome", message, options);
  }
}

export class UnavailableError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("Unavailable", message, options);
  }
}

export class InvalidArgumentError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("InvalidArgument", message, options);
  }
}

export class UnauthenticatedError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("Unauthenticated", message, options);
  }
}

export class PermissionDeniedError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("PermissionDenied", message, options);
  }
}

export class NotFoundError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("NotFound", message, options);
  }
}

export class CommandIdConflictError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("CommandIdConflict", message, options);
  }
}

export class LeaseLostError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("LeaseLost", message, options);
  }
}

export class FailedPreconditionError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("FailedPrecondition", message, options);
  }
}

export class InternalError extends KeyLoadError {
  constructor(message: string, options: KeyLoadErrorOptions = {}) {
    super("Internal", message, options);
  }
}

/**
 * Rebuilds the typed error an error body describes (a leader's answer relayed by a follower, or a
 * response a client received), keeping code, reason, message and details.
 */
export function errorFromBody(error: ErrorBody["error"], commandId = error.commandId): KeyLoadError {
  if (error.code === "ResourceExhausted") {
    const details = (error.details ?? { governor: "command" }) as ResourceExhaustedDetails;
    return new ResourceExhaustedError(error.reason as ResourceExhaustedReason, error.message, details, {
      ...(commandId === undefined ? {} : { commandId }),
    });
  }
  return new KeyLoadError(error.code, error.message, {
    reason: error.reason,
    ...(commandId === undefined ? {} : { commandId }),
    ...(error.details ? { details: error.details } : {}),
  });
}

/** Whether a value received from elsewhere is a registered error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_STATUS, code);
}
