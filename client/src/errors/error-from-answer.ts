import { type ErrorCode, isErrorCode } from "@keyload/contract";
import { CommandIdConflictError } from "./command-id-conflict-error.js";
import { FailedPreconditionError } from "./failed-precondition-error.js";
import { InternalError } from "./internal-error.js";
import { InvalidArgumentError } from "./invalid-argument-error.js";
import type { ClientErrorOptions, KeyLoadClientError } from "./keyload-client-error.js";
import { LeaseLostError } from "./lease-lost-error.js";
import { NotFoundError } from "./not-found-error.js";
import { PermissionDeniedError } from "./permission-denied-error.js";
import { ResourceExhaustedError } from "./resource-exhausted-error.js";
import { UnauthenticatedError } from "./unauthenticated-error.js";
import { UnavailableError } from "./unavailable-error.js";
import { UnknownWriteOutcomeError } from "./unknown-write-outcome-error.js";

type ErrorClass = new (message: string, options?: ClientErrorOptions) => KeyLoadClientError;

const ERROR_CLASSES: Readonly<Record<ErrorCode, ErrorClass>> = {
  ResourceExhausted: ResourceExhaustedError,
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

/** The typed error for a contract code. */
export function errorForCode(
  code: ErrorCode,
  message: string,
  options: ClientErrorOptions = {},
): KeyLoadClientError {
  return new ERROR_CLASSES[code](message, options);
}

/** What an error answer carried, beyond the body text. */
export interface ErrorAnswer {
  readonly status: number;
  readonly text: string;
  readonly endpoint: string;
  readonly retryAfter: number | undefined;
  readonly commandId: string | undefined;
  /** The request was a write: an answer outside the contract then leaves its outcome unknown. */
  readonly write: boolean;
}

/**
 * The typed error an error answer describes. Anything that is not the contract's error body (a proxy's
 * page, a truncated body) becomes InternalError, or UnknownWriteOutcomeError for a write answered with
 * a 5xx, since then nobody said whether it committed.
 */
export function errorFromAnswer(answer: ErrorAnswer): KeyLoadClientError {
  const common = {
    endpoint: answer.endpoint,
    httpStatus: answer.status,
    retryAfter: answer.retryAfter,
  };
  const error = contractError(answer.text);
  if (error !== undefined) {
    return errorForCode(error.code, error.message, {
      ...common,
      reason: error.reason,
      commandId: error.commandId ?? answer.commandId,
      details: error.details,
    });
  }
  const message = `${answer.endpoint} answered ${answer.status} without the contract's error body`;
  const options = { ...common, reason: "UnexpectedAnswer", commandId: answer.commandId };
  return answer.write && answer.status >= 500
    ? new UnknownWriteOutcomeError(message, options)
    : new InternalError(message, options);
}

interface ContractError {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly message: string;
  readonly commandId: string | undefined;
  readonly details: Readonly<Record<string, unknown>> | undefined;
}

function contractError(text: string): ContractError | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (!isRecord(error) || !isErrorCode(error.code) || typeof error.message !== "string") return undefined;
  return {
    code: error.code,
    reason: typeof error.reason === "string" ? error.reason : error.code,
    message: error.message,
    commandId: typeof error.commandId === "string" ? error.commandId : undefined,
    details: isRecord(error.details) ? error.details : undefined,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
