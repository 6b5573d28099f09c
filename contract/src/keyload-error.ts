import {
  type ClientGovernor,
  ERROR_STATUS,
  type ErrorCode,
  type Lane,
  type ResourceExhaustedDetails,
  type ResourceExhaustedReason,
} from "./error-codes.js";
import type { ErrorBody } from "./schemas/error-body.js";

export interface KeyLoadErrorOptions {
  readonly reason?: string;
  readonly commandId?: string;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly cause?: unknown;
  /** The voter that answered (its base URL): set by a client on an error it built from an answer. */
  readonly endpoint?: string;
  /** The HTTP status the voter answered with: set by a client on an error it built from an answer. */
  readonly httpStatus?: number;
  /** The answer's `Retry-After`, in milliseconds: set by a client on an error it built from an answer. */
  readonly retryAfter?: number;
}

/**
 * Base of every typed error that maps onto the contract's error body. The voter throws these and the
 * client throws the same classes (one per code), so `instanceof` holds on either side; what only an
 * answer tells (`endpoint`, `retryAfter`, the answered status) stays undefined on the voter's side.
 */
export class KeyLoadError extends Error {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly commandId: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  /** The voter that answered; undefined on the voter's side and for an error raised in the client. */
  readonly endpoint: string | undefined;
  /** Milliseconds the voter asked the client to wait before trying again (`Retry-After`), if it did. */
  readonly retryAfter: number | undefined;
  private readonly httpStatus: number | undefined;

  constructor(code: ErrorCode, message: string, options: KeyLoadErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.reason = options.reason ?? code;
    this.commandId = options.commandId;
    this.details = options.details;
    this.endpoint = options.endpoint;
    this.retryAfter = options.retryAfter;
    this.httpStatus = options.httpStatus;
  }

  /** The status a voter answered with, on an error a client built from its answer; else the contract's. */
  get status(): number {
    return this.httpStatus ?? this.contractStatus;
  }

  /** The status the contract gives this error (its code's; a subclass may refine it by reason). */
  protected get contractStatus(): number {
    return ERROR_STATUS[this.code];
  }

  /** The same error bound to a command ID (errors are raised before the ID is always known). */
  withCommandId(commandId: string): this {
    const copy = Object.create(Object.getPrototypeOf(this)) as this;
    Object.assign(copy, this, { commandId, message: this.message, stack: this.stack });
    // Error's own `cause` is not enumerable, so Object.assign leaves it behind.
    if (Object.hasOwn(this, "cause")) {
      Object.defineProperty(copy, "cause", { value: this.cause, writable: true, configurable: true });
    }
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

/** What a ResourceExhaustedError takes beyond its reason and details. */
export interface ResourceExhaustedOptions extends Omit<KeyLoadErrorOptions, "reason" | "details"> {
  /** Seconds the voter tells the caller to wait; defaults to 1 (none for BodyTooLarge and ClientThrottled). */
  readonly retryAfterSeconds?: number;
}

/**
 * Admission refused the request (429 with `Retry-After`, or 413 `BodyTooLarge`), or a client's adaptive
 * throttle did (governor `client`, reason `ClientThrottled`). A refused write did not take its command
 * ID: it may be sent again, with the same or another body.
 */
export class ResourceExhaustedError extends KeyLoadError {
  declare readonly reason: ResourceExhaustedReason;
  declare readonly details: ResourceExhaustedDetails;
  /** Seconds the voter sends as `Retry-After`; absent for BodyTooLarge and ClientThrottled. */
  readonly retryAfterSeconds: number | undefined;
  // Read from details, which a client takes from an answer it cannot trust to name a known one.
  readonly governor: ClientGovernor | undefined;
  /** The command lane that refused (command governor). */
  readonly lane: Lane | undefined;
  /** The HTTP pool that refused (HTTP governor). */
  readonly pool: Lane | undefined;

  constructor(
    reason: ResourceExhaustedReason,
    message: string,
    details: ResourceExhaustedDetails,
    options: ResourceExhaustedOptions = {},
  ) {
    super("ResourceExhausted", message, { ...options, reason, details });
    this.retryAfterSeconds =
      reason === "BodyTooLarge" || reason === "ClientThrottled"
        ? undefined
        : (options.retryAfterSeconds ?? 1);
    this.governor = governorOf(details.governor);
    this.lane = laneOf(details.lane);
    this.pool = laneOf(details.pool);
  }

  /** 413 for a body over the route cap, 429 for everything else. */
  protected override get contractStatus(): number {
    return this.reason === "BodyTooLarge" ? 413 : 429;
  }
}

function laneOf(value: unknown): Lane | undefined {
  return value === "data" || value === "control" ? value : undefined;
}

function governorOf(value: unknown): ClientGovernor | undefined {
  return value === "command" || value === "http" || value === "client" ? value : undefined;
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

type ErrorClass = new (message: string, options?: KeyLoadErrorOptions) => KeyLoadError;

// ResourceExhausted is built apart: its class takes the reason and details first.
const ERROR_CLASSES: Readonly<Record<Exclude<ErrorCode, "ResourceExhausted">, ErrorClass>> = {
  UnknownWriteOutcome: UnknownWriteOutcomeError,
  Unavailable: UnavailableError,
  InvalidArgument: InvalidArgumentError,
  Unauthenticated: UnauthenticatedError,
  PermissionDenied: PermissionDeniedError,
  NotFound: NotFoundError,
  CommandIdConflict: CommandIdConflictError,
  LeaseLost: LeaseLostError,
  FailedPrecondition: FailedPreconditionError,
  Internal: InternalError,
};

/**
 * The typed error of a code, of its own class: what a relayed or received error body becomes, so that
 * `instanceof NotFoundError` holds for it as for one raised where it is caught. A ResourceExhausted's
 * reason and details, read from elsewhere, are taken as the contract's; the class reads them defensively.
 */
export function errorForCode(
  code: ErrorCode,
  message: string,
  options: KeyLoadErrorOptions & Pick<ResourceExhaustedOptions, "retryAfterSeconds"> = {},
): KeyLoadError {
  if (code !== "ResourceExhausted") return new ERROR_CLASSES[code](message, options);
  const { reason, details, ...rest } = options;
  return new ResourceExhaustedError(
    (reason ?? code) as ResourceExhaustedReason,
    message,
    (details ?? {}) as ResourceExhaustedDetails,
    rest,
  );
}

/**
 * Rebuilds the typed error an error body describes (a leader's answer relayed by a follower, or a
 * response a client received), keeping code, reason, message and details; `relayed` carries what the
 * body does not: the command ID it answers and a refusal's Retry-After.
 */
export function errorFromBody(
  error: ErrorBody["error"],
  relayed: { readonly commandId?: string | undefined; readonly retryAfterSeconds?: number | undefined } = {},
): KeyLoadError {
  const commandId = relayed.commandId ?? error.commandId;
  return errorForCode(error.code, error.message, {
    reason: error.reason,
    ...(commandId === undefined ? {} : { commandId }),
    ...(error.code === "ResourceExhausted"
      ? {
          details: error.details ?? { governor: "command" },
          ...(relayed.retryAfterSeconds === undefined
            ? {}
            : { retryAfterSeconds: relayed.retryAfterSeconds }),
        }
      : error.details
        ? { details: error.details }
        : {}),
  });
}

/** Whether a value received from elsewhere is a registered error code. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === "string" && Object.hasOwn(ERROR_STATUS, code);
}
