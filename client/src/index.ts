export type { AdaptiveThrottleOptions } from "./adaptive-throttle.js";
export * from "./api-types.js";
export type { BackoffOptions } from "./backoff.js";
export { CLIENT_DEFAULTS, type ClientTlsOptions, type KeyLoadClientOptions } from "./client-options.js";
export { CommandIdConflictError } from "./errors/command-id-conflict-error.js";
export { ConnectionError, type ConnectionFailure } from "./errors/connection-error.js";
export { FailedPreconditionError } from "./errors/failed-precondition-error.js";
export { InternalError } from "./errors/internal-error.js";
export { InvalidArgumentError } from "./errors/invalid-argument-error.js";
export { type ClientErrorOptions, KeyLoadClientError } from "./errors/keyload-client-error.js";
export { LeaseLostError } from "./errors/lease-lost-error.js";
export { NotFoundError } from "./errors/not-found-error.js";
export { PermissionDeniedError } from "./errors/permission-denied-error.js";
export { type ClientGovernor, ResourceExhaustedError } from "./errors/resource-exhausted-error.js";
export { UnauthenticatedError } from "./errors/unauthenticated-error.js";
export { UnavailableError } from "./errors/unavailable-error.js";
export { UnknownWriteOutcomeError } from "./errors/unknown-write-outcome-error.js";
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
export { uuidV7 } from "./uuid-v7.js";
