import { InvalidArgumentError } from "@keyload/contract";
import type { AdaptiveThrottleOptions } from "./adaptive-throttle.js";
import type { BackoffOptions } from "./backoff.js";
import { normalizeEndpoint } from "./endpoint-set.js";
import type { RetryBudgetOptions } from "./retry-budget.js";

/** How `https://` endpoints are trusted. */
export interface ClientTlsOptions {
  /**
   * The certificate authorities to trust (PEM), in place of Node's default ones: the CA that signed the
   * voters' certificates when it is a private one. Absent: Node's default CAs.
   */
  readonly ca?: string | Buffer | readonly (string | Buffer)[];
}

export interface KeyLoadClientOptions {
  /** Voter base URLs (e.g. `http://127.0.0.1:7101`). Any may be asked; the first is tried first. */
  readonly endpoints: readonly string[];
  /** Sent as `Authorization: Bearer <apiKey>`; without one only health, metrics and the API document answer. */
  readonly apiKey?: string;
  /** How long one attempt waits for the answer's headers. */
  readonly requestTimeoutMs?: number;
  /** How long one attempt waits between two chunks of the answer's body. */
  readonly bodyTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Connections per voter. */
  readonly connections?: number;
  readonly tls?: ClientTlsOptions;
  /**
   * How long a call may take, its attempts and the waits between them together: no attempt starts
   * after it, and one under way waits for its answer no longer than the call has left.
   */
  readonly deadlineMs?: number;
  /** Attempts per call, the first included. */
  readonly maxAttempts?: number;
  readonly backoff?: Partial<BackoffOptions>;
  readonly retryBudget?: Partial<RetryBudgetOptions>;
  /** `false` turns client-side throttling off. */
  readonly adaptiveThrottle?: Partial<AdaptiveThrottleOptions> | false;
  /**
   * Whether a 429 is tried again once its `Retry-After` has passed (within the deadline, the attempts and
   * the retry budget). A refusal never takes the command ID, so this is safe for writes too.
   */
  readonly retryResourceExhausted?: boolean;
  /** The clock (ms since the epoch) for command IDs, the retry budget and the throttle; tests inject one. */
  readonly now?: () => number;
  /** A uniform random number in [0, 1) for jitter and throttling; tests inject one. */
  readonly random?: () => number;
}

export interface ResolvedClientOptions {
  readonly endpoints: readonly string[];
  readonly apiKey: string | undefined;
  readonly requestTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly connections: number;
  readonly tls: ClientTlsOptions;
  readonly deadlineMs: number;
  readonly maxAttempts: number;
  readonly backoff: BackoffOptions;
  readonly retryBudget: RetryBudgetOptions;
  readonly adaptiveThrottle: AdaptiveThrottleOptions | false;
  readonly retryResourceExhausted: boolean;
  readonly now: () => number;
  readonly random: () => number;
}

/** Every default of the client, in one place. */
export const CLIENT_DEFAULTS = {
  // Above the voter's 10 s ReplicationDeadlineMs, so a slow commit is answered by the voter
  // (UnknownWriteOutcome, with a leader hint) rather than cut here.
  requestTimeoutMs: 15_000,
  bodyTimeoutMs: 30_000,
  connectTimeoutMs: 2_000,
  connections: 16,
  tls: {},
  // Long enough to ride out an election (election timeout 1 s, each waiting up to 2 s) a few times over.
  deadlineMs: 30_000,
  // With full jitter the expected wait over 12 attempts is about 6 s: several elections.
  maxAttempts: 12,
  backoff: { initialMs: 50, maxMs: 2_000, multiplier: 2 },
  retryBudget: { ratio: 0.1, capacity: 10, refillPerSecond: 1 },
  adaptiveThrottle: { k: 2, windowMs: 120_000, buckets: 12 },
  retryResourceExhausted: true,
} as const satisfies Omit<ResolvedClientOptions, "endpoints" | "apiKey" | "now" | "random">;

function invalidOption(message: string): InvalidArgumentError {
  return new InvalidArgumentError(message, { reason: "InvalidClientOption" });
}

function positive(name: string, value: number, integer = false): number {
  if (!(value > 0) || (integer && !Number.isInteger(value)) || !Number.isFinite(value)) {
    throw invalidOption(`${name} must be a positive ${integer ? "integer" : "number"}, not ${value}`);
  }
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!(value >= 0) || !Number.isFinite(value))
    throw invalidOption(`${name} must be 0 or more, not ${value}`);
  return value;
}

function checkedTls(tls: ClientTlsOptions | undefined): ClientTlsOptions {
  const ca = tls?.ca;
  if (ca === undefined) return {};
  const pems = typeof ca === "string" || Buffer.isBuffer(ca) ? [ca] : ca;
  if (pems.length === 0 || pems.some((pem) => pem.length === 0)) {
    throw invalidOption("tls.ca must be one or more PEM certificates, not empty");
  }
  return { ca };
}

export function resolveClientOptions(options: KeyLoadClientOptions): ResolvedClientOptions {
  if (options.endpoints.length === 0) {
    throw invalidOption("a client needs at least one voter endpoint");
  }
  const backoff = { ...CLIENT_DEFAULTS.backoff, ...options.backoff };
  const retryBudget = { ...CLIENT_DEFAULTS.retryBudget, ...options.retryBudget };
  const throttle =
    options.adaptiveThrottle === false
      ? false
      : { ...CLIENT_DEFAULTS.adaptiveThrottle, ...options.adaptiveThrottle };
  if (throttle !== false) {
    positive("adaptiveThrottle.k", throttle.k);
    positive("adaptiveThrottle.windowMs", throttle.windowMs);
    positive("adaptiveThrottle.buckets", throttle.buckets, true);
  }
  return {
    endpoints: [...new Set(options.endpoints.map(normalizeEndpoint))],
    apiKey: options.apiKey,
    requestTimeoutMs: positive(
      "requestTimeoutMs",
      options.requestTimeoutMs ?? CLIENT_DEFAULTS.requestTimeoutMs,
    ),
    bodyTimeoutMs: positive("bodyTimeoutMs", options.bodyTimeoutMs ?? CLIENT_DEFAULTS.bodyTimeoutMs),
    connectTimeoutMs: positive(
      "connectTimeoutMs",
      options.connectTimeoutMs ?? CLIENT_DEFAULTS.connectTimeoutMs,
    ),
    connections: positive("connections", options.connections ?? CLIENT_DEFAULTS.connections, true),
    tls: { ...CLIENT_DEFAULTS.tls, ...checkedTls(options.tls) },
    deadlineMs: positive("deadlineMs", options.deadlineMs ?? CLIENT_DEFAULTS.deadlineMs),
    maxAttempts: positive("maxAttempts", options.maxAttempts ?? CLIENT_DEFAULTS.maxAttempts, true),
    backoff: {
      initialMs: positive("backoff.initialMs", backoff.initialMs),
      maxMs: positive("backoff.maxMs", backoff.maxMs),
      multiplier: positive("backoff.multiplier", backoff.multiplier),
    },
    retryBudget: {
      ratio: nonNegative("retryBudget.ratio", retryBudget.ratio),
      capacity: nonNegative("retryBudget.capacity", retryBudget.capacity),
      refillPerSecond: nonNegative("retryBudget.refillPerSecond", retryBudget.refillPerSecond),
    },
    adaptiveThrottle: throttle,
    retryResourceExhausted: options.retryResourceExhausted ?? CLIENT_DEFAULTS.retryResourceExhausted,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
  };
}
