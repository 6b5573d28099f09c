import { InvalidArgumentError, READ_LIMITS } from "@keyload/contract";
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
  /**
   * Sent as `Authorization: Bearer <apiKey>` on every route but health, the only ones that answer
   * without one. Visible ASCII only (a key read from a file keeps its newline unless trimmed).
   */
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
  /**
   * The most bytes of a successful answer the client reads; past it the call ends in InternalError
   * `AnswerTooLarge` (UnknownWriteOutcomeError for a write). Raise it only for voters whose limits allow
   * larger documents than the defaults do.
   */
  readonly maxAnswerBytes?: number;
  readonly backoff?: Partial<BackoffOptions>;
  readonly retryBudget?: Partial<RetryBudgetOptions>;
  /** `false` turns client-side throttling off. */
  readonly adaptiveThrottle?: Partial<AdaptiveThrottleOptions> | false;
  /**
   * Whether a 429 is tried again once its `Retry-After` has passed (within the deadline, the attempts and
   * the retry budget). A refusal never takes the command ID, so this is safe for writes too.
   */
  readonly retryResourceExhausted?: boolean;
  /** The wall clock (ms since the epoch): command IDs, a Retry-After given as a date. Tests inject one. */
  readonly now?: () => number;
  /**
   * A monotonic clock (ms from any origin) for what measures elapsed time: deadlines, the retry budget and
   * the throttle's window, which a wall clock stepped back would stretch. `performance.now` by default.
   */
  readonly monotonicNow?: () => number;
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
  readonly maxAnswerBytes: number;
  readonly backoff: BackoffOptions;
  readonly retryBudget: RetryBudgetOptions;
  readonly adaptiveThrottle: AdaptiveThrottleOptions | false;
  readonly retryResourceExhausted: boolean;
  readonly now: () => number;
  readonly monotonicNow: () => number;
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
  // Four read pages (16 MiB of JSON each, a page's bound), and the heavy read's modeled working space: far
  // above the largest answer, a page with one document larger than its bound (at most 8 MiB by default).
  maxAnswerBytes: 4 * READ_LIMITS.maxPageBytes,
  backoff: { initialMs: 50, maxMs: 2_000, multiplier: 2 },
  retryBudget: { ratio: 0.1, capacity: 10, refillPerSecond: 1 },
  adaptiveThrottle: { k: 2, windowMs: 120_000, buckets: 12 },
  retryResourceExhausted: true,
} as const satisfies Omit<ResolvedClientOptions, "endpoints" | "apiKey" | "now" | "monotonicNow" | "random">;

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

/** An API key as a header can carry it: visible ASCII, as a Bearer token is (RFC 6750's token68 and more). */
function checkedApiKey(apiKey: string | undefined): string | undefined {
  if (apiKey === undefined || /^[\x21-\x7e]+$/.test(apiKey)) return apiKey;
  // The key itself stays out of the message: it is a secret, and errors end up in logs.
  throw invalidOption(
    `apiKey must be one or more visible ASCII characters, without spaces or line breaks (it has ${apiKey.length} characters)`,
  );
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
    apiKey: checkedApiKey(options.apiKey),
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
    maxAnswerBytes: positive(
      "maxAnswerBytes",
      options.maxAnswerBytes ?? CLIENT_DEFAULTS.maxAnswerBytes,
      true,
    ),
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
    // Bound: called detached from `performance`, its method would throw.
    monotonicNow: options.monotonicNow ?? (() => performance.now()),
    random: options.random ?? Math.random,
  };
}
