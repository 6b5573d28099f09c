import { InternalError, type KeyLoadError, UnknownWriteOutcomeError } from "@keyload/contract";

export interface UnexpectedAnswerContext {
  readonly endpoint: string;
  readonly status: number;
  readonly commandId: string | undefined;
  /** The request was a write: whoever answered, the voter may have applied it. */
  readonly write: boolean;
}

/**
 * An answer the client will not take (one too large, a redirect, a body not of the route's shape): an
 * InternalError with `reason`, or for a write UnknownWriteOutcomeError, since a voter may have applied
 * it whatever came back.
 */
export function unexpectedAnswer(
  reason: "AnswerTooLarge" | "UnexpectedAnswer",
  message: string,
  context: UnexpectedAnswerContext,
  cause?: unknown,
): KeyLoadError {
  const options = {
    reason,
    endpoint: context.endpoint,
    httpStatus: context.status,
    commandId: context.commandId,
    ...(cause === undefined ? {} : { cause }),
  };
  return context.write ? new UnknownWriteOutcomeError(message, options) : new InternalError(message, options);
}
