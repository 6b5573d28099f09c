import {
  COMMAND_ID_PATTERN,
  InvalidArgumentError,
  KeyLoadError,
  type Lane,
  ResourceExhaustedError,
  UnknownWriteOutcomeError,
} from "@keyload/contract";
import { onAbort } from "./abort-listeners.js";
import { AdaptiveThrottle } from "./adaptive-throttle.js";
import { backoffDelay } from "./backoff.js";
import type { ResolvedClientOptions } from "./client-options.js";
import { EndpointSet, normalizeEndpoint } from "./endpoint-set.js";
import { ConnectionError } from "./errors/connection-error.js";
import { errorFromAnswer } from "./errors/error-from-answer.js";
import { unexpectedAnswer } from "./errors/unexpected-answer.js";
import type {
  HttpMethod,
  HttpTransport,
  IncomingAnswer,
  OutgoingBody,
  OutgoingRequest,
} from "./http-transport.js";
import { LEADER_HEADER, parseLeaderHint } from "./leader-hint.js";
import { setLongTimeout } from "./long-timeout.js";
import { parseRetryAfter, retryAfterDelay } from "./retry-after.js";
import { RetryBudget } from "./retry-budget.js";
import { UuidV7Generator } from "./uuid-v7.js";

export const COMMAND_ID_HEADER = "keyload-command-id";

const COMMAND_ID = new RegExp(COMMAND_ID_PATTERN);

/**
 * The most an error answer's body is read: the contract's error body is a few hundred bytes, and a
 * proxy's error page says nothing the client can use past its status.
 */
export const MAX_ERROR_ANSWER_BYTES = 64 * 1024;

/**
 * What a call is. `write`: a command, sent with a command ID and only ever retried with that same ID.
 * `read`: retried freely. `change`: a change that names the state it wants (a membership change), so
 * retried freely too, without a command ID. `ops` (health, metrics, the API document): about one voter,
 * so asked once, without a key, and outside the throttle and the retry budget.
 */
export type ExchangeKind = "write" | "read" | "change" | "ops";

/** A body a retry can send again: JSON text, or a function that opens the same byte stream anew. */
export type ReplayableBody = string | (() => AsyncIterable<Uint8Array>);

export interface Exchange {
  readonly kind: ExchangeKind;
  /** The route's lane, whose adaptive throttle the call is under; null for the operations routes. */
  readonly lane: Lane | null;
  readonly method: HttpMethod;
  readonly path: string;
  /** A one-shot stream makes the call a single attempt: it cannot be sent twice. */
  readonly body?: ReplayableBody | AsyncIterable<Uint8Array>;
  /** Sent without the API key: the health routes, the only ones that take none. */
  readonly keyless?: true;
}

export interface CallOptions {
  /** Aborts the call, its attempts and the waits between them. */
  readonly signal?: AbortSignal;
  /** Ask only this voter (any URL, listed or not): no failover and no leader hints. */
  readonly endpoint?: string;
}

export interface WriteOptions extends CallOptions {
  /** The command ID (1-128 of `[A-Za-z0-9._:-]`); a UUIDv7 is generated when absent. */
  readonly commandId?: string;
}

type Failure = KeyLoadError | ConnectionError;

type Attempt<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly failure: Failure;
      readonly answer?: IncomingAnswer;
      /** An answer outside the contract (too large, a redirect, another shape): asking again would not help. */
      readonly final?: true;
    };

/** Where and when the next attempt goes. */
interface RetryPlan {
  readonly endpoint: string;
  readonly delayMs: number;
  /** The wait a refusal asked for (its Retry-After), which `delayMs` spreads beyond. */
  readonly askedMs?: number;
}

/**
 * Runs one call: attempts, failover, leader hints, backoff, the retry budget and the adaptive throttle.
 * A write is retried only on answers that leave it safe to send again under its own command ID
 * (UnknownWriteOutcome, Unavailable, a connection failure, an admission refusal), so the voters'
 * deduplication guarantees it applies at most once however many attempts it takes.
 */
export class RequestExecutor {
  readonly endpoints: EndpointSet;
  private readonly budget: RetryBudget;
  /** One per lane: the voters admit control work from a reserve of its own, so data refusals say nothing of it. */
  private readonly throttles: Readonly<Record<Lane, AdaptiveThrottle>> | undefined;
  private readonly commandIds: UuidV7Generator;

  constructor(
    private readonly options: ResolvedClientOptions,
    private readonly transport: HttpTransport,
  ) {
    this.endpoints = new EndpointSet(options.endpoints);
    this.budget = new RetryBudget(options.retryBudget, options.monotonicNow);
    const throttle = options.adaptiveThrottle;
    this.throttles =
      throttle === false
        ? undefined
        : {
            data: new AdaptiveThrottle(throttle, options.monotonicNow, options.random),
            control: new AdaptiveThrottle(throttle, options.monotonicNow, options.random),
          };
    this.commandIds = new UuidV7Generator(options.now);
  }

  /** A new command ID: a UUIDv7 on the client's clock, greater than every one this client made before. */
  newCommandId(): string {
    return this.commandIds.next();
  }

  /**
   * Runs `exchange` until an attempt succeeds or retrying stops, and returns what `read` made of the
   * successful answer's body. The body is read inside the attempt, so one cut short is retried like any
   * other connection failure.
   */
  async execute<T>(exchange: Exchange, options: WriteOptions, read: (text: string) => T): Promise<T> {
    const started = this.options.monotonicNow();
    const commandId = exchange.kind === "write" ? (options.commandId ?? this.newCommandId()) : undefined;
    if (commandId !== undefined) checkCommandId(commandId);
    const pinned = options.endpoint === undefined ? undefined : pinnedEndpoint(options.endpoint, commandId);
    this.transport.throwIfClosed(pinned ?? this.endpoints.current(), commandId);
    const replayable = exchange.body === undefined || isReplayable(exchange.body);
    const maxAttempts = exchange.kind === "ops" || !replayable ? 1 : this.options.maxAttempts;
    const throttle = this.throttleOf(exchange);
    if (exchange.kind !== "ops") {
      this.budget.recordRequest();
      if (throttle?.shouldReject()) throw this.throttled(commandId, exchange.lane, throttle);
    }
    let endpoint = pinned ?? this.endpoints.current();
    const tried = new Set<string>();
    let ambiguous = false;
    for (let attempt = 1; ; attempt++) {
      tried.add(endpoint);
      const timeLeftMs = this.options.deadlineMs - (this.options.monotonicNow() - started);
      const request = this.request(exchange, commandId, options.signal, timeLeftMs);
      const result = await this.attempt(exchange, endpoint, request, pinned !== undefined, throttle, read);
      if (result.ok) return result.value;
      const failure = result.failure;
      if (commandId !== undefined && mayHaveApplied(failure)) ambiguous = true;
      if (result.final === true) throw finalError(failure, commandId, ambiguous, attempt);
      const plan = this.plan(failure, result.answer, endpoint, pinned, tried, attempt);
      const elapsed = this.options.monotonicNow() - started;
      const delayMs = plan === undefined ? 0 : withinDeadline(plan, this.options.deadlineMs - elapsed);
      if (
        plan === undefined ||
        attempt >= maxAttempts ||
        elapsed + delayMs > this.options.deadlineMs ||
        !this.budget.tryRetry()
      ) {
        throw finalError(failure, commandId, ambiguous, attempt);
      }
      if (delayMs > 0) {
        try {
          await this.pause(delayMs, options.signal, endpoint, commandId);
        } catch (error) {
          // The retry its token was taken for is never sent.
          this.budget.refundRetry();
          // Closed while it waited, a write whose earlier attempt may have committed is still unresolved.
          throw error instanceof ConnectionError ? finalError(error, commandId, ambiguous, attempt) : error;
        }
      }
      endpoint = plan.endpoint;
    }
  }

  /** One request to one voter (the preferred one by default), outside retries, throttle and budget: `raw`. */
  async sendOnce(endpoint: string | undefined, request: OutgoingRequest): Promise<IncomingAnswer> {
    return this.transport.send(
      endpoint === undefined ? this.endpoints.current() : normalizeEndpoint(endpoint),
      request,
    );
  }

  headers(keyed: boolean, commandId: string | undefined, hasBody: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (keyed && this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (commandId !== undefined) headers[COMMAND_ID_HEADER] = commandId;
    if (hasBody) headers["content-type"] = "application/json";
    return headers;
  }

  private request(
    exchange: Exchange,
    commandId: string | undefined,
    signal: AbortSignal | undefined,
    timeLeftMs: number,
  ): OutgoingRequest {
    return {
      method: exchange.method,
      path: exchange.path,
      headers: this.headers(exchange.keyless !== true, commandId, exchange.body !== undefined),
      body: openBody(exchange.body),
      signal,
      commandId,
      timeLeftMs,
    };
  }

  private throttleOf(exchange: Exchange): AdaptiveThrottle | undefined {
    return exchange.kind === "ops" || exchange.lane === null ? undefined : this.throttles?.[exchange.lane];
  }

  private async attempt<T>(
    exchange: Exchange,
    endpoint: string,
    request: OutgoingRequest,
    pinned: boolean,
    throttle: AdaptiveThrottle | undefined,
    read: (text: string) => T,
  ): Promise<Attempt<T>> {
    let answer: IncomingAnswer;
    let text: string | undefined;
    const success = (status: number): boolean => status >= 200 && status < 300;
    try {
      answer = await this.transport.send(endpoint, request);
      const maxBytes = success(answer.status) ? this.options.maxAnswerBytes : MAX_ERROR_ANSWER_BYTES;
      text = await this.transport.readText(answer, request, maxBytes);
    } catch (error) {
      if (error instanceof ConnectionError) return { ok: false, failure: error };
      throw error;
    }
    const write = exchange.kind === "write";
    const failure =
      answer.status >= 400 && text !== undefined
        ? errorFromAnswer({
            status: answer.status,
            text,
            endpoint,
            retryAfter: parseRetryAfter(headerValue(answer, "retry-after"), this.options.now()),
            commandId: request.commandId,
            write,
          })
        : undefined;
    // A voter-local refusal leaves the lane's throttle and the preferred voter alone: plan() moves on.
    if (!(failure instanceof ResourceExhaustedError && isVoterLocal(failure))) {
      throttle?.record(answer.status !== 429);
      if (!pinned && answer.status < 500) this.endpoints.answered(endpoint);
    }
    const unexpected = { endpoint, status: answer.status, commandId: request.commandId, write };
    if (text === undefined) {
      const message = `${endpoint} answered ${answer.status} with a body over the client's cap, dropped unread`;
      return { ok: false, failure: unexpectedAnswer("AnswerTooLarge", message, unexpected), final: true };
    }
    if (success(answer.status)) {
      try {
        const value = read(text);
        if (request.commandId !== undefined) checkAnsweredCommandId(value, request.commandId);
        return { ok: true, value };
      } catch (error) {
        const message = `${endpoint} answered ${answer.status} with a body the client cannot read`;
        return {
          ok: false,
          failure: unexpectedAnswer("UnexpectedAnswer", message, unexpected, error),
          final: true,
        };
      }
    }
    if (failure === undefined) {
      // A redirect, most likely a proxy's: whether the voter was reached, and a write applied, is unknown.
      const message = `${endpoint} answered ${answer.status}, which no route of the contract answers`;
      return { ok: false, failure: unexpectedAnswer("UnexpectedAnswer", message, unexpected), final: true };
    }
    return { ok: false, failure, answer };
  }

  /** Whether and where to try again after `failure`; undefined: the failure is the call's answer. */
  private plan(
    failure: Failure,
    answer: IncomingAnswer | undefined,
    endpoint: string,
    pinned: string | undefined,
    tried: ReadonlySet<string>,
    attempt: number,
  ): RetryPlan | undefined {
    const backoff = backoffDelay(attempt, this.options.backoff, this.options.random);
    if (failure instanceof ConnectionError) {
      // The caller's abort and the client's close end the call; undici's refusal, or the caller's body
      // stream failing, would only repeat.
      if (
        failure.reason === "Aborted" ||
        failure.reason === "ClientClosed" ||
        failure.reason === "NotSent" ||
        failure.reason === "BodyFailed"
      ) {
        return undefined;
      }
      // Waiting will not make a certificate trusted: every voter is asked once, then the call ends.
      if (failure.reason === "TlsFailed") {
        const next = pinned ?? this.endpoints.failOver(endpoint);
        return tried.has(next) ? undefined : { endpoint: next, delayMs: 0 };
      }
      // A dead voter says nothing about the others: one not yet asked in this call is asked at once.
      const next = pinned ?? this.endpoints.failOver(endpoint);
      return { endpoint: next, delayMs: tried.has(next) ? backoff : 0 };
    }
    if (failure instanceof ResourceExhaustedError) {
      // Failed over even when the call ends here, so that the next call leaves the refusing voter too.
      const next = isVoterLocal(failure) ? (pinned ?? this.endpoints.failOver(endpoint)) : endpoint;
      if (!this.options.retryResourceExhausted || !isTransientRefusal(failure)) return undefined;
      // Another voter has refused nothing yet: one not yet asked in this call is asked at once.
      if (next !== endpoint && !tried.has(next)) return { endpoint: next, delayMs: 0 };
      const askedMs = refusalDelayMs(failure);
      const delayMs = retryAfterDelay(askedMs, this.options.random) + backoff;
      return { endpoint: next, delayMs, askedMs };
    }
    if (failure.code !== "Unavailable" && failure.code !== "UnknownWriteOutcome") return undefined;
    if (pinned !== undefined) return { endpoint: pinned, delayMs: backoff };
    const hinted = this.endpoints.follow(parseLeaderHint(answer && headerValue(answer, LEADER_HEADER)));
    // A hint names where the leader is now, so it is followed at once unless this call already went
    // there. Without one (or naming the voter that answered, which is then on its way out) the cluster
    // is most likely electing, and every voter would say the same at once: another voter, after a pause.
    if (hinted !== undefined && hinted !== endpoint) {
      return { endpoint: hinted, delayMs: tried.has(hinted) ? backoff : 0 };
    }
    return { endpoint: this.endpoints.failOver(endpoint), delayMs: backoff };
  }

  /**
   * Waits before a retry, however long (a Retry-After past what one timer holds too); the caller's abort
   * ends the wait, and the call, with ConnectionError `Aborted`, and the client's close with
   * `ClientClosed` (nothing is being sent while it waits).
   */
  async pause(
    delayMs: number,
    signal: AbortSignal | undefined,
    endpoint: string,
    commandId: string | undefined,
  ): Promise<void> {
    try {
      await delay(delayMs, [signal, this.transport.closedSignal]);
    } catch (error) {
      if (signal?.aborted !== true) this.transport.throwIfClosed(endpoint, commandId);
      throw new ConnectionError("the call was aborted while it waited to retry", {
        reason: "Aborted",
        endpoint,
        commandId,
        cause: error,
      });
    }
  }

  private throttled(
    commandId: string | undefined,
    lane: Lane | null,
    throttle: AdaptiveThrottle,
  ): ResourceExhaustedError {
    return new ResourceExhaustedError(
      "ClientThrottled",
      "the client's adaptive throttle rejected the request locally: the cluster has been refusing requests",
      {
        governor: "client",
        ...(lane === null ? {} : { lane }),
        rejectProbability: throttle.rejectProbability(),
      },
      { commandId },
    );
  }
}

/**
 * Resolves after `delayMs`, or rejects with the reason of the first of `signals` to abort. Abort
 * callbacks, removed as the wait ends: AbortSignal.any would tie a new signal to the caller's and the
 * client's long-lived ones, which Node 20 keeps until they abort, a leak per wait.
 */
function delay(delayMs: number, signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  const sources = signals.filter((signal) => signal !== undefined);
  const aborted = sources.find((signal) => signal.aborted);
  if (aborted !== undefined) return Promise.reject(aborted.reason);
  return new Promise((resolve, reject) => {
    const stop = (): void => {
      timeout.clear();
      for (const detach of detaches) detach();
    };
    const timeout = setLongTimeout(() => {
      stop();
      resolve();
    }, delayMs);
    const detaches = sources.map((source) =>
      onAbort(source, () => {
        stop();
        reject(source.reason);
      }),
    );
  });
}

/** The endpoint a call is pinned to; a write refused for a bad one still names its command ID. */
function pinnedEndpoint(endpoint: string, commandId: string | undefined): string {
  try {
    return normalizeEndpoint(endpoint);
  } catch (error) {
    if (commandId !== undefined && error instanceof KeyLoadError) throw error.withCommandId(commandId);
    throw error;
  }
}

/** A command ID the contract takes (section 4): anything else the voter refuses, or undici cannot send. */
/**
 * The wait before the next attempt, given `roomMs` left before the call's deadline. The random share
 * spread over a Retry-After (retryAfterDelay) is cut to half of the room the asked wait leaves, rather
 * than giving up on a retry that fits: a 20 s Retry-After under a 30 s deadline waits 20–25 s, not
 * 20–40 s and so, half the time, not at all.
 */
function withinDeadline(plan: RetryPlan, roomMs: number): number {
  const asked = plan.askedMs;
  if (asked === undefined || plan.delayMs <= roomMs || asked >= roomMs) return plan.delayMs;
  return asked + Math.floor((roomMs - asked) / 2);
}

/**
 * A write's answer names the command it answers: another ID (a proxy's cached or misrouted answer) says
 * nothing of this command's outcome, so it must not pass for this command's success.
 */
function checkAnsweredCommandId(value: unknown, commandId: string): void {
  if (typeof value !== "object" || value === null || !Object.hasOwn(value, "commandId")) return;
  const answered = (value as { readonly commandId: unknown }).commandId;
  if (answered !== commandId) {
    throw new TypeError(`the answer names command ${JSON.stringify(answered)}, not ${commandId}`);
  }
}

function checkCommandId(commandId: string): void {
  if (COMMAND_ID.test(commandId)) return;
  throw new InvalidArgumentError(
    `the command ID ${JSON.stringify(commandId)} is not 1-128 characters of [A-Za-z0-9._:-]`,
    { reason: "InvalidCommandId", commandId },
  );
}

/** How long a refusal asked to be left alone: its Retry-After, or the contract's default second without one. */
export function refusalDelayMs(error: ResourceExhaustedError): number {
  return error.retryAfter ?? (error.retryAfterSeconds ?? 1) * 1000;
}

/** How long a failure asked the client to wait before asking again, before jitter; undefined: nothing. */
export function askedDelayMs(failure: unknown): number | undefined {
  if (failure instanceof ResourceExhaustedError) return refusalDelayMs(failure);
  return failure instanceof KeyLoadError ? failure.retryAfter : undefined;
}

function isReplayable(body: ReplayableBody | AsyncIterable<Uint8Array>): body is ReplayableBody {
  return typeof body === "string" || typeof body === "function";
}

function openBody(body: Exchange["body"]): OutgoingBody | undefined {
  return typeof body === "function" ? body() : body;
}

function headerValue(answer: IncomingAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Whether a refusal is the answering voter's own: its HTTP pool's, or its command governor's where that
 * voter is a follower (details.leader false; its limits may differ from the others'). Another voter may
 * well accept the call, so it goes there, and the refusal does not feed the lane's throttle, which is
 * the whole cluster's; only the leader's command refusals, relayed alike by every voter, speak for the
 * cluster. A voter that does not say whose it was is taken at its disk floors' word alone.
 */
function isVoterLocal(error: ResourceExhaustedError): boolean {
  if (error.reason === "BodyTooLarge") return false;
  if (error.governor === "http") return true;
  const leader = error.details?.leader;
  if (typeof leader === "boolean") return !leader;
  return error.reason === "DiskFloor" || error.reason === "DiskHardFloor";
}

/** Refusals that may pass later; a body or payload over its cap never will. */
function isTransientRefusal(error: ResourceExhaustedError): boolean {
  return (
    error.governor !== "client" &&
    error.reason !== "BodyTooLarge" &&
    error.reason !== "ControlPayloadTooLarge"
  );
}

/**
 * Whether the failed attempt of a write may still have committed. Internal counts: the voter answers any
 * unexpected failure so, one after it submitted the command included (errorFromAnswer already reports a
 * write's as UnknownWriteOutcome, so that it is retried under the same command ID too).
 */
function mayHaveApplied(failure: Failure): boolean {
  return failure instanceof ConnectionError
    ? failure.mayHaveReachedVoter
    : failure.code === "UnknownWriteOutcome" || failure.code === "Internal";
}

/**
 * The error a call ends with. A write whose earlier attempt may have committed ends in
 * UnknownWriteOutcome whatever its last attempt said (an Unavailable only speaks for itself), unless the
 * caller aborted it; every error of a write carries its command ID.
 */
function finalError(
  failure: Failure,
  commandId: string | undefined,
  ambiguous: boolean,
  attempts: number,
): Failure {
  const aborted = failure instanceof ConnectionError && failure.reason === "Aborted";
  if (commandId !== undefined && ambiguous && !aborted && failure.code !== "UnknownWriteOutcome") {
    const closed = failure instanceof ConnectionError && failure.reason === "ClientClosed";
    // Kept, so that resolveOutcome waits out what the last answer asked before its next round.
    const retryAfter = askedDelayMs(failure);
    return new UnknownWriteOutcomeError(
      `${closed ? "the client was closed" : `gave up`} after ${attempts} attempts, of which one may have committed: resubmit with the same command ID (${failure.message})`,
      {
        reason: closed ? "ClientClosed" : "RetriesExhausted",
        commandId,
        endpoint: failure.endpoint,
        cause: failure,
        ...(retryAfter === undefined ? {} : { retryAfter }),
      },
    );
  }
  if (failure instanceof KeyLoadError && commandId !== undefined && failure.commandId === undefined) {
    return failure.withCommandId(commandId);
  }
  return failure;
}
