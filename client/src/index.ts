// The error classes are the contract's, the very ones the voter throws, so `instanceof` holds across.
// KeyLoadClientError and ClientErrorOptions are the names this package used before it shared them.
export {
  type ClientGovernor,
  CommandIdConflictError,
  ERROR_CODES,
  ERROR_STATUS,
  type ErrorCode,
  FailedPreconditionError,
  type Governor,
  InternalError,
  InvalidArgumentError,
  isErrorCode,
  KeyLoadError,
  KeyLoadError as KeyLoadClientError,
  type KeyLoadErrorOptions as ClientErrorOptions,
  type KeyLoadErrorOptions,
  type Lane,
  LeaseLostError,
  NotFoundError,
  PermissionDeniedError,
  type ResourceExhaustedDetails,
  ResourceExhaustedError,
  type ResourceExhaustedOptions,
  type ResourceExhaustedReason,
  UnauthenticatedError,
  UnavailableError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
export type { AdaptiveThrottleOptions } from "./adaptive-throttle.js";
export * from "./api-types.js";
export type { BackoffOptions } from "./backoff.js";
export { CLIENT_DEFAULTS, type ClientTlsOptions, type KeyLoadClientOptions } from "./client-options.js";
export { ConnectionError, type ConnectionFailure } from "./errors/connection-error.js";
export type { HttpMethod } from "./http-transport.js";
export {
  type ChunkedBody,
  type DispatchReadOptions,
  type EnqueueOptions,
  KeyLoadClient,
  type PutOptions,
  type RawRequest,
  type RawResponse,
  type RenewOptions,
  type ResolveOptions,
  type SubscriptionOptions,
} from "./keyload-client.js";
export { type LeaderHint, parseLeaderHint } from "./leader-hint.js";
export { type CallOptions, COMMAND_ID_HEADER, type WriteOptions } from "./request-executor.js";
export type { RetryBudgetOptions } from "./retry-budget.js";
export { UuidV7Generator, uuidV7 } from "./uuid-v7.js";
