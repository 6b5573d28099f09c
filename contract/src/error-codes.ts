/**
 * The registry of public error codes (contract section 6): every error a client can see has one of
 * these codes, its HTTP status and the body shape below.
 */
export const ERROR_STATUS = {
  ResourceExhausted: 429,
  UnknownWriteOutcome: 504,
  Unavailable: 503,
  InvalidArgument: 400,
  Unauthenticated: 401,
  PermissionDenied: 403,
  NotFound: 404,
  CommandIdConflict: 409,
  LeaseLost: 409,
  FailedPrecondition: 412,
  Internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/** Why admission refused: the `reason` of a ResourceExhausted error. */
export type ResourceExhaustedReason =
  | "CommandCount"
  | "CommandBytes"
  | "TenantCommands"
  | "PrincipalCommands"
  | "ControlPayloadTooLarge"
  | "HttpRequests"
  | "HttpBytes"
  | "TenantRequests"
  | "PrincipalRequests"
  | "BodyTooLarge"
  /** The voter's free disk is below its floor: data commands are refused (contract section 8). */
  | "DiskFloor"
  /** The voter's free disk is below its hard floor: control commands are refused too. */
  | "DiskHardFloor"
  /** A client's adaptive throttle refused locally (governor `client`); no voter sends it. */
  | "ClientThrottled";

export type Governor = "command" | "http";
/** Who refused: a voter's command or HTTP admission, or (`client`) a client's own adaptive throttle. */
export type ClientGovernor = Governor | "client";
export type Lane = "data" | "control";

/** `details` of a ResourceExhausted error: which governor, lane or pool, and the limit that refused. */
export interface ResourceExhaustedDetails {
  /** A voter sends `command` or `http`; `client` only names a client's own throttle. */
  readonly governor: ClientGovernor;
  readonly lane?: Lane;
  readonly pool?: Lane;
  /** The configuration property that refused, e.g. `MaxRetainedBytes`. */
  readonly limit?: string;
  readonly limitValue?: number;
  /** What the refused request would have needed (bytes or count). */
  readonly requested?: number;
  /** What was in use when it was refused. */
  readonly inUse?: number;
  /**
   * A command refusal's: whether the leader's governor refused (a follower relays that unchanged, so
   * every voter answers alike) or the answering follower's own, whose limits may differ.
   */
  readonly leader?: boolean;
  readonly [key: string]: unknown;
}
