import {
  type ErrorCode,
  errorForCode,
  InternalError,
  isErrorCode,
  type KeyLoadError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";

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
 * a 5xx, since then nobody said whether it committed. A write answered Internal is
 * UnknownWriteOutcomeError too (reason `Internal`, the voter's InternalError its cause): the voter answers
 * any unexpected failure so, one after it submitted the command included.
 */
export function errorFromAnswer(answer: ErrorAnswer): KeyLoadError {
  const common = {
    endpoint: answer.endpoint,
    httpStatus: answer.status,
    retryAfter: answer.retryAfter,
  };
  const error = contractError(answer.text);
  if (error !== undefined) {
    // The ID this request carried is the one to retry or resolve under, whatever the body says.
    const commandId = answer.commandId ?? error.commandId;
    const typed = errorForCode(error.code, error.message, {
      ...common,
      // So a received refusal's retryAfterSeconds is what the voter sent, not the contract's default.
      ...(answer.retryAfter === undefined ? {} : { retryAfterSeconds: Math.ceil(answer.retryAfter / 1000) }),
      reason: error.reason,
      commandId,
      details: error.details,
    });
    if (!answer.write || typed.code !== "Internal") return typed;
    return new UnknownWriteOutcomeError(
      `${answer.endpoint} answered ${answer.status} Internal, which may have come after the write was submitted (${error.message})`,
      { ...common, reason: "Internal", commandId, cause: typed },
    );
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
