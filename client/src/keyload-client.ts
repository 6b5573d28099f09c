import {
  ApiDocumentSchema,
  type ErrorCode,
  HealthSchema,
  InternalError,
  InvalidArgumentError,
  KeyLoadError,
  PATH_PARAM_SCHEMAS,
  type PathParamName,
  RESPONSE_SCHEMAS,
  type RequestBodyKind,
  type RequestBodyOf,
  ResourceExhaustedError,
  type ResponseKind,
  type ResponseOf,
  ROUTE_LANES,
  ROUTE_PATHS,
  type RouteKind,
  type RouteParams,
  routePath,
  UnknownWriteOutcomeError,
  WrittenSchema,
} from "@keyload/contract";
import type {
  AckDeliveryResult,
  AdmissionStatus,
  BulkGetItem,
  BulkGetResult,
  ClusterLeaderTransfer,
  ClusterMemberChange,
  ClusterMembers,
  CommandOutcome,
  CompleteDeliveryResult,
  CompleteResult,
  CreateKeyResult,
  DeleteEdgeResult,
  DeleteKeyResult,
  DeleteResult,
  DeliveryRequest,
  DeliveryResult,
  DispatchRead,
  DispatchResult,
  Document,
  Edge,
  EnqueueResult,
  Health,
  LeaseResult,
  MembershipTable,
  MemberWrite,
  NackResult,
  PrincipalWrite,
  PutEdgeResult,
  PutMemberResult,
  PutPrincipalResult,
  PutResult,
  PutSubscriptionResult,
  QueryPage,
  QueryRequest,
  QueueMessageRef,
  RenewResult,
  SearchRequest,
  SearchResult,
  TransactionResult,
  Traversal,
  TraverseRequest,
  WriteSet,
  Written,
} from "./api-types.js";
import { backoffDelay } from "./backoff.js";
import {
  type KeyLoadClientOptions,
  type ResolvedClientOptions,
  resolveClientOptions,
} from "./client-options.js";
import { ConnectionError } from "./errors/connection-error.js";
import { type HttpMethod, HttpTransport, type IncomingAnswer } from "./http-transport.js";
import {
  askedDelayMs,
  type CallOptions,
  type Exchange,
  type ExchangeKind,
  RequestExecutor,
  type WriteOptions,
} from "./request-executor.js";
import { retryAfterDelay } from "./retry-after.js";
import { conforms } from "./schema-check.js";

export interface PutOptions extends WriteOptions {
  /** Apply only if the key is at this version; 0: only if it does not exist. */
  readonly expectedVersion?: number;
}

export interface EnqueueOptions extends WriteOptions {
  /** Milliseconds before the message becomes visible. */
  readonly delayMs?: number;
}

export interface RenewOptions extends WriteOptions {
  readonly visibilityTimeoutMs?: number;
}

export interface SubscriptionOptions extends WriteOptions {
  /** Where a new subscription starts in the change feed. */
  readonly from?: "beginning" | "end";
}

export interface DispatchReadOptions extends CallOptions {
  /** Directives with a sequence number above this (default 0). */
  readonly after?: number;
  /** At most this many directives, from 1 (the voter's default when absent; it caps larger ones). */
  readonly limit?: number;
}

export interface ResolveOptions {
  readonly signal?: AbortSignal;
  /** No new round starts once this long has passed; the client's `deadlineMs` by default. */
  readonly deadlineMs?: number;
}

/** A body streamed without a Content-Length; a function that opens it anew lets a failed attempt be retried. */
export type ChunkedBody = AsyncIterable<Uint8Array> | (() => AsyncIterable<Uint8Array>);

export interface RawRequest {
  readonly method: HttpMethod;
  /** Path and query string, percent-encoded. */
  readonly path: string;
  /** A string or bytes go with a Content-Length; an AsyncIterable (a Readable too) goes chunked. */
  readonly body?: string | Uint8Array | AsyncIterable<Uint8Array>;
  /** Added to (and overriding) the client's own: authorization, accept, content-type, command ID. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly commandId?: string;
  /** The voter to ask; the client's preferred one by default. */
  readonly endpoint?: string;
  readonly signal?: AbortSignal;
}

/** An answer as it came, whatever its status; `body` is undici's stream, still unread. */
export interface RawResponse extends Pick<IncomingAnswer, "endpoint" | "status" | "headers" | "body"> {
  readonly commandId: string | undefined;
}

/** The kinds of route that take a body and answer one: every write, membership change and POST read. */
type WireKind = RequestBodyKind & ResponseKind;

/**
 * A reader of answers of `schema`'s shape, the contract's for the route: a voter gone wrong, or a proxy
 * in its place, may answer any JSON with a 2xx, which must not reach the caller as a result.
 */
function answerOf<T>(schema: unknown): (text: string) => T {
  return (text) => {
    const value: unknown = JSON.parse(text);
    if (!conforms(schema, value)) throw new TypeError("the answer is not of the shape the route answers");
    return value as T;
  };
}

function text(body: string): string {
  return body;
}

/**
 * Whether a failed submission still leaves the command's durable outcome unknown (so resubmitting helps).
 * Not a request that never wholly left: undici refused it, or the caller's body stream failed, which
 * sending it again would only repeat.
 */
function outcomeUnknown(error: unknown): error is KeyLoadError | ConnectionError {
  if (error instanceof ConnectionError) {
    return error.reason !== "Aborted" && error.reason !== "NotSent" && error.reason !== "BodyFailed";
  }
  if (error instanceof ResourceExhaustedError) return !overCap(error);
  return (
    error instanceof KeyLoadError && (error.code === "UnknownWriteOutcome" || error.code === "Unavailable")
  );
}

/** A body or control payload over the answering voter's cap: it refuses it again however long one waits. */
function overCap(error: ResourceExhaustedError): boolean {
  return error.reason === "BodyTooLarge" || error.reason === "ControlPayloadTooLarge";
}

/**
 * The codes only the command itself answers: its committed outcome (a version mismatch, a lost lease, a
 * conflict or an expired outcome under its ID, NotFound, a canonical limit, which every voter applies
 * alike), or a refusal of what its request says (malformed JSON, an unknown route, a command ID the
 * voter does not take), which the same request always gets, so the attempt that may have committed got
 * it too. Not among them, as they are decided before the voter looks the command ID up, by what this
 * one voter holds now: Unauthenticated and PermissionDenied (a key revoked or a role removed between two
 * rounds; a stored outcome is not even told to a caller the catalog no longer lets send the command),
 * and ResourceExhausted of any reason (admission is local, its body and control payload caps too, which
 * may differ per voter or change between rounds).
 */
const SETTLING_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "InvalidArgument",
  "NotFound",
  "CommandIdConflict",
  "LeaseLost",
  "FailedPrecondition",
]);

/** InvalidArgument reasons about how one attempt's bytes arrived (too slowly, cut off), not what they say. */
const DELIVERY_REFUSALS: ReadonlySet<string> = new Set(["RequestTimeout", "RequestAborted"]);

/**
 * Whether a failed submission is the command's answer, which resolveOutcome passes on as is: the
 * caller's abort, or an answer of SETTLING_CODES. Anything else leaves the outcome unknown.
 */
function settles(error: unknown): boolean {
  if (error instanceof ConnectionError) return error.reason === "Aborted";
  return (
    error instanceof KeyLoadError && SETTLING_CODES.has(error.code) && !DELIVERY_REFUSALS.has(error.reason)
  );
}

/** resolveOutcome gave up without learning the outcome. */
function unresolved(
  reason: "ResolveTimedOut" | "ResolveFailed" | "ClientClosed",
  why: string,
  commandId: string,
  cause: unknown,
): UnknownWriteOutcomeError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  const endpoint =
    cause instanceof KeyLoadError || cause instanceof ConnectionError ? cause.endpoint : undefined;
  return new UnknownWriteOutcomeError(
    `the outcome of command ${commandId} is still unknown: ${why}; resubmit it with the same command ID (${detail})`,
    { reason, commandId, cause, ...(endpoint === undefined ? {} : { endpoint }) },
  );
}

/** A pager whose cursor does not move would ask for the same page forever. */
function cursorStuck(message: string, details: Readonly<Record<string, unknown>>): InternalError {
  return new InternalError(message, { reason: "CursorStuck", details });
}

/**
 * The typed KeyLoad client: one method per route of the contract. Any voter may be asked; the client
 * follows leader hints, fails over on connection failures, retries writes only under their own command
 * ID, and keeps its retries within a budget and its load within what the cluster accepts. Every write
 * result and every error of a write carries the command ID.
 */
export class KeyLoadClient {
  private readonly options: ResolvedClientOptions;
  private readonly transport: HttpTransport;
  private readonly executor: RequestExecutor;

  constructor(options: KeyLoadClientOptions) {
    this.options = resolveClientOptions(options);
    this.transport = new HttpTransport(this.options);
    this.executor = new RequestExecutor(this.options, this.transport);
  }

  /** The voter the next call goes to first. */
  get preferredEndpoint(): string {
    return this.executor.endpoints.current();
  }

  /** A fresh command ID (UUIDv7), for a caller that wants to know it before sending. */
  newCommandId(): string {
    return this.executor.newCommandId();
  }

  // Catalog

  get<T = unknown>(key: string, options: CallOptions = {}): Promise<Document<T>> {
    return this.read("catalog.get", { key }, options);
  }

  put(key: string, value: unknown, options: PutOptions = {}): Promise<PutResult> {
    // Left out of the body, it would send no value at all: the voter refuses that too, after the round trip.
    const commandId = options.commandId ?? this.newCommandId();
    if (value === undefined) {
      return Promise.reject(
        new InvalidArgumentError("put needs a value; undefined is not JSON (null is)", {
          reason: "InvalidBody",
          commandId,
        }),
      );
    }
    const body = { value, expectedVersion: options.expectedVersion };
    return this.write("catalog.put", { key }, body, { ...options, commandId });
  }

  delete(key: string, options: PutOptions = {}): Promise<DeleteResult> {
    const body =
      options.expectedVersion === undefined ? undefined : { expectedVersion: options.expectedVersion };
    return this.write("catalog.delete", { key }, body, options);
  }

  /** One page: past its byte bound, the keys not answered are in `remaining` (see bulkGetAll). */
  bulkGet<T = unknown>(keys: readonly string[], options: CallOptions = {}): Promise<BulkGetResult<T>> {
    return this.readPost("catalog.bulkGet", {}, { keys }, options);
  }

  /**
   * Every key's item, in request order, asking again for the `remaining` keys of each page; InternalError
   * `CursorStuck` if a page leaves as many keys remaining as it was asked for.
   */
  async *bulkGetAll<T = unknown>(
    keys: readonly string[],
    options: CallOptions = {},
  ): AsyncGenerator<BulkGetItem<T>> {
    let remaining: readonly string[] = keys;
    while (remaining.length > 0) {
      const page: BulkGetResult<T> = await this.bulkGet<T>(remaining, options);
      const next = page.remaining ?? [];
      // A page answers at least one key (one over the byte bound goes alone), so the rest always shrinks.
      if (next.length >= remaining.length) {
        throw cursorStuck(`a bulk-get page of ${remaining.length} keys left ${next.length} remaining`, {
          asked: remaining.length,
          remaining: next.length,
        });
      }
      yield* page.items;
      remaining = next;
    }
  }

  query<T = unknown>(request: QueryRequest = {}, options: CallOptions = {}): Promise<QueryPage<T>> {
    return this.readPost("query", {}, request, options);
  }

  /**
   * Every document `request` matches, page by page, so a large result is never held whole; InternalError
   * `CursorStuck` if a page answers the cursor it was asked with as its next.
   */
  async *queryAll<T = unknown>(
    request: QueryRequest = {},
    options: CallOptions = {},
  ): AsyncGenerator<Document<T>> {
    let after = request.after;
    do {
      const page = await this.query<T>({ ...request, after }, options);
      if (page.next !== undefined && page.next === after) {
        throw cursorStuck(`a query page asked after ${JSON.stringify(after)} answered it as its next`, {
          after,
        });
      }
      yield* page.items;
      after = page.next;
    } while (after !== undefined);
  }

  search<T = unknown>(request: SearchRequest, options: CallOptions = {}): Promise<SearchResult<T>> {
    return this.readPost("search", {}, request, options);
  }

  /** Puts, deletes and checks, plus outbox messages, applied atomically. */
  transaction(writeSet: WriteSet, options: WriteOptions = {}): Promise<TransactionResult> {
    return this.write("transaction", {}, writeSet, options);
  }

  // Graph

  putEdge(edge: Edge, options: WriteOptions = {}): Promise<PutEdgeResult> {
    return this.write("graph.putEdge", {}, edgeBody(edge), options);
  }

  deleteEdge(edge: Edge, options: WriteOptions = {}): Promise<DeleteEdgeResult> {
    return this.write("graph.deleteEdge", {}, edgeBody(edge), options);
  }

  traverse(request: TraverseRequest, options: CallOptions = {}): Promise<Traversal> {
    return this.readPost("graph.traverse", {}, request, options);
  }

  // Queues

  enqueue(queue: string, body: unknown, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    return this.write("queue.enqueue", { queue }, { body, delayMs: options.delayMs }, options);
  }

  lease<T = unknown>(
    queue: string,
    request?: DeliveryRequest,
    options: WriteOptions = {},
  ): Promise<LeaseResult<T>> {
    return this.write("queue.lease", { queue }, request, options);
  }

  ack(
    queue: string,
    messageId: string,
    leaseToken: string,
    options: WriteOptions = {},
  ): Promise<QueueMessageRef> {
    return this.write("queue.ack", { queue, messageId }, { leaseToken }, options);
  }

  /** Returns a leased message to the queue (after `delayMs`), or to its dead-letter queue past the attempt limit. */
  nack(
    queue: string,
    messageId: string,
    leaseToken: string,
    options: EnqueueOptions = {},
  ): Promise<NackResult> {
    const body = { leaseToken, delayMs: options.delayMs };
    return this.write("queue.nack", { queue, messageId }, body, options);
  }

  renew(
    queue: string,
    messageId: string,
    leaseToken: string,
    options: RenewOptions = {},
  ): Promise<RenewResult> {
    const body = { leaseToken, visibilityTimeoutMs: options.visibilityTimeoutMs };
    return this.write("queue.renew", { queue, messageId }, body, options);
  }

  /** The processing effect: acknowledges the message and applies `writeSet` atomically. */
  complete(
    queue: string,
    messageId: string,
    leaseToken: string,
    writeSet: WriteSet = {},
    options: WriteOptions = {},
  ): Promise<CompleteResult> {
    return this.write("queue.complete", { queue, messageId }, { leaseToken, ...writeSet }, options);
  }

  // Subscriptions

  putSubscription(
    name: string,
    prefix: string,
    options: SubscriptionOptions = {},
  ): Promise<PutSubscriptionResult> {
    return this.write("subscription.put", { name }, { prefix, from: options.from }, options);
  }

  deliver(name: string, request?: DeliveryRequest, options: WriteOptions = {}): Promise<DeliveryResult> {
    return this.write("subscription.deliver", { name }, request, options);
  }

  ackDelivery(name: string, deliveryId: string, options: WriteOptions = {}): Promise<AckDeliveryResult> {
    return this.write("subscription.ack", { name, deliveryId }, undefined, options);
  }

  /** The projection effect: acknowledges the delivery and applies `writeSet` atomically. */
  completeDelivery(
    name: string,
    deliveryId: string,
    writeSet: WriteSet = {},
    options: WriteOptions = {},
  ): Promise<CompleteDeliveryResult> {
    return this.write("subscription.complete", { name, deliveryId }, writeSet, options);
  }

  // Membership and dispatch

  putMember(memberId: string, write: MemberWrite, options: WriteOptions = {}): Promise<PutMemberResult> {
    return this.write("membership.put", { memberId }, write, options);
  }

  membership(options: CallOptions = {}): Promise<MembershipTable> {
    return this.read("membership.list", {}, options);
  }

  dispatch(
    channel: string,
    directive: string,
    data?: unknown,
    options: WriteOptions = {},
  ): Promise<DispatchResult> {
    return this.write("dispatch.append", { channel }, { directive, data }, options);
  }

  readDispatch(channel: string, options: DispatchReadOptions = {}): Promise<DispatchRead> {
    const query = new URLSearchParams();
    if (options.after !== undefined) query.set("after", String(options.after));
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    return this.read("dispatch.read", { channel }, options, query.toString());
  }

  // Principal catalog and admission

  putPrincipal(principal: PrincipalWrite, options: WriteOptions = {}): Promise<PutPrincipalResult> {
    const body = { principalId: principal.principalId, tenantId: principal.tenantId, roles: principal.roles };
    return this.write("admin.putPrincipal", {}, body, options);
  }

  /**
   * A new API key for the principal; its plain text is in the result, and nowhere else, ever. When an
   * earlier attempt under the same command ID made the key and its answer was lost, `apiKey` is absent:
   * no one holds that key, so delete `keyId` and create another.
   */
  createKey(principalId: string, options: WriteOptions = {}): Promise<CreateKeyResult> {
    return this.write("admin.createKey", { principalId }, undefined, options);
  }

  deleteKey(principalId: string, keyId: string, options: WriteOptions = {}): Promise<DeleteKeyResult> {
    return this.write("admin.deleteKey", { principalId, keyId }, undefined, options);
  }

  /** One voter's admission limits and usage (`endpoint` picks the voter). */
  admissionStatus(options: CallOptions = {}): Promise<AdmissionStatus> {
    return this.read("admin.admissionStatus", {}, options);
  }

  // The Raft configuration (admin role), as etcd's member add --learner, promote, remove and list

  /**
   * The voters and learners as the answering voter has applied them (a linearizable read); only the
   * leader knows how far each member's log goes, so only its answer holds `match` (see `endpoint`).
   */
  clusterMembers(options: CallOptions = {}): Promise<ClusterMembers> {
    return this.read("cluster.members", {}, options);
  }

  /**
   * Adds `memberId` (a voter started on empty storage says its own in `/health/live`) as a learner: it
   * receives the log but neither votes nor counts toward a commit until promoted.
   */
  addLearner(memberId: string, options: CallOptions = {}): Promise<ClusterMemberChange> {
    return this.change("cluster.addLearner", {}, { memberId }, options);
  }

  /** Makes a learner that has caught up a voter; FailedPreconditionError `LearnerBehind` until it has. */
  promoteMember(memberId: string, options: CallOptions = {}): Promise<ClusterMemberChange> {
    return this.change("cluster.promote", { clusterMemberId: memberId }, undefined, options);
  }

  /** Removes a member; a leader removing itself hands leadership to another voter first. */
  removeMember(memberId: string, options: CallOptions = {}): Promise<ClusterMemberChange> {
    return this.change("cluster.remove", { clusterMemberId: memberId }, undefined, options);
  }

  /**
   * Hands leadership to the voter `memberId` (its member ID, or its name) and resolves once it leads;
   * UnavailableError `LeaderTransferTimeout` when it did not take over in time (asking again is safe).
   */
  transferLeader(memberId: string, options: CallOptions = {}): Promise<ClusterLeaderTransfer> {
    return this.change("cluster.transferLeader", {}, { memberId }, options);
  }

  // Commands

  /**
   * The command's committed outcome; `status: "expired"` once only its dedupe record remains (it applied,
   * the result is gone); NotFoundError while none is committed, or after the dedupe window too.
   */
  getCommand(commandId: string, options: CallOptions = {}): Promise<CommandOutcome> {
    return this.read("command.get", { commandId }, options);
  }

  /**
   * Resubmits a command under `commandId` until its durable outcome is known, and returns it (or throws
   * the refusal it committed as). `submit` must send the same command each time, e.g.
   * `(o) => client.put("k", v, o)`: the voters answer a resubmission with the original outcome, so the
   * command applies at most once. A resubmission also settles the question `getCommand` cannot: a 404
   * there means "not committed yet", which an attempt that was lost would answer forever. Past the full
   * outcome's window the resubmission is refused, not applied: CommandIdConflictError with reason
   * `OutcomeExpired` and `details.index`, the entry that applied it (`getCommand` tells whether it failed).
   * It gives up only in UnknownWriteOutcomeError (reason `ResolveTimedOut` past its deadline, `ClientClosed`,
   * or `ResolveFailed` on an answer that says nothing of the command, such as a 401, a 403 or a voter's
   * body cap, all decided before the voter looks the command ID up; the refusal is its cause), or at the
   * caller's abort: never in an error that would read as "not applied".
   */
  async resolveOutcome<T>(
    commandId: string,
    submit: (options: WriteOptions) => Promise<T>,
    options: ResolveOptions = {},
  ): Promise<T> {
    const started = this.options.monotonicNow();
    const deadlineMs = options.deadlineMs ?? this.options.deadlineMs;
    for (let round = 1; ; round++) {
      try {
        return await submit({
          commandId,
          ...(options.signal === undefined ? {} : { signal: options.signal }),
        });
      } catch (error) {
        if (settles(error)) throw error;
        if (this.transport.closed)
          throw unresolved("ClientClosed", "the client was closed", commandId, error);
        if (!outcomeUnknown(error)) {
          const why =
            error instanceof ConnectionError
              ? "the request could not be sent whole"
              : "the answer says nothing of the command";
          throw unresolved("ResolveFailed", why, commandId, error);
        }
        // Jittered as the executor's waits are: callers refused together must not come back together.
        const asked = retryAfterDelay(askedDelayMs(error) ?? 0, this.options.random);
        const wait = Math.max(asked, backoffDelay(round, this.options.backoff, this.options.random));
        if (this.options.monotonicNow() - started + wait > deadlineMs) {
          throw unresolved("ResolveTimedOut", "no round answered it in time", commandId, error);
        }
        try {
          await this.executor.pause(
            wait,
            options.signal,
            error.endpoint ?? this.preferredEndpoint,
            commandId,
          );
        } catch (pauseError) {
          if (this.transport.closed && options.signal?.aborted !== true) {
            throw unresolved("ClientClosed", "the client was closed", commandId, error);
          }
          throw pauseError;
        }
      }
    }
  }

  // Operations: about one voter each, asked once; health without a key

  /** Liveness of one voter; UnavailableError (reason NotLive) when it is not. */
  live(options: CallOptions = {}): Promise<Health> {
    return this.call(routeExchange("ops", "health.live", {}), options, answerOf<Health>(HealthSchema));
  }

  /** Readiness of one voter: a member with a known leader, caught up; UnavailableError (NotReady) when not. */
  ready(options: CallOptions = {}): Promise<Health> {
    return this.call(routeExchange("ops", "health.ready", {}), options, answerOf<Health>(HealthSchema));
  }

  /** One voter's Prometheus metrics, as text. */
  metrics(options: CallOptions = {}): Promise<string> {
    return this.call(routeExchange("ops", "metrics", {}), options, text);
  }

  /** The API as an OpenAPI 3.1 document. */
  openApi(options: CallOptions = {}): Promise<Readonly<Record<string, unknown>>> {
    return this.call(
      routeExchange("ops", "openapi", {}),
      options,
      answerOf<Record<string, unknown>>(ApiDocumentSchema),
    );
  }

  // Streaming

  /**
   * A write whose body is streamed without a Content-Length (chunked), to any write route, with the
   * usual command ID, typed errors and retries. Only a body given as a function is retried, since a
   * stream can be read once; a body over the route's cap answers ResourceExhaustedError `BodyTooLarge`.
   * It is throttled as data (the control routes take at most 64 KiB, hardly a stream's business).
   */
  upload<T extends Written = Written & Readonly<Record<string, unknown>>>(
    method: Exclude<HttpMethod, "GET">,
    path: string,
    body: ChunkedBody,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.call(
      { kind: "write", lane: "data", method, path, body },
      options,
      answerOf<T>(WrittenSchema),
    );
  }

  /**
   * One request, sent once, answered as it came: any status, the headers, and the body as undici's
   * stream (read it, e.g. `for await (const chunk of response.body)`, or dump it). For large answers and
   * for tests of the HTTP edge itself; only a transport failure throws (ConnectionError).
   */
  async raw(request: RawRequest): Promise<RawResponse> {
    const headers = {
      ...this.executor.headers(true, request.commandId, request.body !== undefined),
      ...lowerCaseKeys(request.headers ?? {}),
    };
    const {
      endpoint,
      status,
      headers: answered,
      body,
    } = await this.executor.sendOnce(request.endpoint, {
      method: request.method,
      path: request.path,
      headers,
      body: request.body,
      signal: request.signal,
      commandId: request.commandId,
    });
    return { endpoint, status, headers: answered, body, commandId: request.commandId };
  }

  /**
   * Closes the connections. Calls still running fail at once, and every call after: with ConnectionError
   * `ClientClosed` when nothing of them was sent, with UnknownWriteOutcomeError `ClientClosed` for a
   * write that may have been.
   */
  async close(): Promise<void> {
    await this.transport.close();
  }

  private call<T>(exchange: Exchange, options: WriteOptions, read: (text: string) => T): Promise<T> {
    return this.executor.execute(exchange, options, read);
  }

  // The route helpers are async so that a path parameter missing at runtime (a caller without the
  // types), which routePath throws for, rejects the call as a refusal would, instead of throwing.

  /**
   * A write of `kind`: its body and its answer are typed by the contract's schemas for that kind, the
   * ones the voter validates and documents the route with. `R` narrows the answer only where the
   * contract leaves a field any JSON (the caller's `T` of a document or message).
   */
  private async write<K extends WireKind, R extends ResponseOf<K> = ResponseOf<K>>(
    kind: K,
    params: RouteParams<K>,
    body: RequestBodyOf<K> | undefined,
    options: WriteOptions,
  ): Promise<R> {
    // The ID first, so that a write refused for its path parameters names it as every write's error does.
    const commandId = options.commandId ?? this.newCommandId();
    let exchange: Exchange;
    try {
      exchange = routeExchange("write", kind, params, body);
    } catch (error) {
      throw error instanceof KeyLoadError ? error.withCommandId(commandId) : error;
    }
    return this.call(exchange, { ...options, commandId }, answerOf<R>(RESPONSE_SCHEMAS[kind]));
  }

  /** A change of the Raft configuration of `kind`, typed as `write` is. */
  private async change<K extends WireKind>(
    kind: K,
    params: RouteParams<K>,
    body: RequestBodyOf<K> | undefined,
    options: CallOptions,
  ): Promise<ResponseOf<K>> {
    return this.call(
      routeExchange("change", kind, params, body),
      options,
      answerOf<ResponseOf<K>>(RESPONSE_SCHEMAS[kind]),
    );
  }

  /** A read that takes its request as a JSON body, typed as `write` is. */
  private async readPost<K extends WireKind, R extends ResponseOf<K> = ResponseOf<K>>(
    kind: K,
    params: RouteParams<K>,
    body: RequestBodyOf<K>,
    options: CallOptions,
  ): Promise<R> {
    return this.call(routeExchange("read", kind, params, body), options, answerOf<R>(RESPONSE_SCHEMAS[kind]));
  }

  /** A GET read of `kind`, its answer typed by the contract's schema for it; `search` is its query string. */
  private async read<K extends ResponseKind, R extends ResponseOf<K> = ResponseOf<K>>(
    kind: K,
    params: RouteParams<K>,
    options: CallOptions,
    search = "",
  ): Promise<R> {
    return this.call(
      routeExchange("read", kind, params, undefined, search),
      options,
      answerOf<R>(RESPONSE_SCHEMAS[kind]),
    );
  }
}

/**
 * One route's exchange: its method and path are the contract's for `kind` (ROUTE_PATHS), the ones the
 * voter serves it at, with `params` percent-encoded into the path and `search`, a query string, after it,
 * and its lane the contract's (ROUTE_LANES).
 */
function routeExchange<K extends RouteKind>(
  exchangeKind: ExchangeKind,
  kind: K,
  params: RouteParams<K>,
  body?: unknown,
  search = "",
): Exchange {
  const path = routePath(kind, params);
  checkPathParams(kind, params);
  return {
    kind: exchangeKind,
    lane: ROUTE_LANES[kind],
    method: ROUTE_PATHS[kind].method,
    path: search === "" ? path : `${path}?${search}`,
    ...(body === undefined ? {} : { body: jsonBody(body) }),
    ...(kind === "health.live" || kind === "health.ready" ? { keyless: true } : {}),
  };
}

/**
 * Each path parameter against the contract's schema for it, the one the voter's edge checks: a key of
 * no or too many characters, or a name outside its alphabet, is refused before anything is sent, as
 * the voter would refuse it (InvalidArgumentError `InvalidParameter`). So is one of dots alone: URL
 * resolution (the voter's, a proxy's) takes "." and ".." for dot segments, however encoded, and
 * addresses another route.
 */
function checkPathParams(kind: RouteKind, params: Readonly<Record<string, unknown>>): void {
  for (const [name, value] of Object.entries(params)) {
    if (!Object.hasOwn(PATH_PARAM_SCHEMAS, name)) continue;
    if (value === "." || value === ".." || !conforms(PATH_PARAM_SCHEMAS[name as PathParamName], value)) {
      throw new InvalidArgumentError(`the path parameter ${name} of ${kind} is not of the contract's shape`, {
        reason: "InvalidParameter",
        details: { kind, parameter: name },
      });
    }
  }
}

/**
 * A request body as JSON text. What JSON cannot hold (a BigInt, a cycle, a throwing toJSON), and what
 * JSON.stringify would silently turn into something else (NaN or an infinity into null, a function or
 * symbol dropped or made null, a Map, Set, typed array or RegExp into `{}`), is InvalidArgumentError
 * `InvalidBody`, the voter's reason for a body it cannot take, before anything is sent. An object
 * property left undefined is omitted, as JSON has it.
 */
function jsonBody(body: unknown): string {
  try {
    return JSON.stringify(body, faithfulJson);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new InvalidArgumentError(`the request body cannot be sent as JSON (${detail})`, {
      reason: "InvalidBody",
      cause: error,
    });
  }
}

/** JSON.stringify's replacer for jsonBody: called with each value after its toJSON, if any. */
function faithfulJson(this: unknown, key: string, value: unknown): unknown {
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`${where(key)} is ${value}, which JSON cannot hold`);
      return value;
    case "function":
    case "symbol":
      throw new TypeError(`${where(key)} is a ${typeof value}, which JSON cannot hold`);
    case "undefined":
      // An array's hole or undefined element would become null; an object's property is left out.
      if (Array.isArray(this)) throw new TypeError(`${where(key)} is undefined, which JSON cannot hold`);
      return value;
    case "object":
      if (value !== null && !Array.isArray(value) && mangledByJson(value)) {
        const type = (value as object).constructor?.name ?? "object";
        throw new TypeError(`${where(key)} is a ${type}, which JSON would send as {}`);
      }
      return value;
    default:
      return value;
  }
}

function where(key: string): string {
  return key === "" ? "the body" : `the value at ${JSON.stringify(key)}`;
}

/** Objects whose content JSON.stringify does not see (it sees own enumerable properties only). */
function mangledByJson(value: object): boolean {
  return (
    value instanceof Map ||
    value instanceof Set ||
    value instanceof WeakMap ||
    value instanceof WeakSet ||
    value instanceof RegExp ||
    value instanceof Promise ||
    value instanceof Error ||
    value instanceof ArrayBuffer ||
    ArrayBuffer.isView(value)
  );
}

/** Exactly the contract's fields: a caller's object may carry more, which would change the payload. */
function edgeBody(edge: Edge): Edge {
  return { from: edge.from, type: edge.type, to: edge.to };
}

function lowerCaseKeys(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}
