import { setMaxListeners } from "node:events";
import type { IncomingHttpHeaders } from "node:http";
import { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import { readBoundedText } from "./bounded-text.js";
import type { ClientTlsOptions } from "./client-options.js";
import { ConnectionError, type ConnectionFailure } from "./errors/connection-error.js";
import { ExchangeSignal } from "./exchange-signal.js";

export type HttpMethod = "GET" | "PUT" | "POST" | "DELETE";

/** A request body: text or bytes of a known length, or bytes streamed without a Content-Length (chunked). */
export type OutgoingBody = string | Uint8Array | AsyncIterable<Uint8Array>;

export interface OutgoingRequest {
  readonly method: HttpMethod;
  /** The path and query string, percent-encoded, appended to the endpoint's own path. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: OutgoingBody | undefined;
  readonly signal: AbortSignal | undefined;
  /** Bound to the ConnectionError of a failed exchange. */
  readonly commandId: string | undefined;
  /**
   * How long the call it belongs to may still take: the whole exchange, its connection, its headers and
   * its body, ends then. Unbounded when absent.
   */
  readonly timeLeftMs?: number;
}

/** The answer's status line and headers; the body is still unread. */
export interface IncomingAnswer {
  readonly endpoint: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Dispatcher.ResponseData["body"];
  /** Ends the exchange, body included, at the caller's abort, the client's close or the call's deadline. */
  readonly exchange: ExchangeSignal;
}

export interface TransportOptions {
  readonly connectTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly connections: number;
  readonly tls: ClientTlsOptions;
}

/** Errors that mean no connection was made, so the request never left this process. */
const CONNECT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);
/**
 * undici's (and Node's) refusals of a request before any of it is written: a header or path it cannot
 * send (a newline in a value, say), or a dispatcher already closed or destroyed.
 */
const NOT_SENT_CODES = new Set([
  "UND_ERR_INVALID_ARG",
  "UND_ERR_CLOSED",
  "UND_ERR_DESTROYED",
  "ERR_INVALID_CHAR",
  "ERR_INVALID_HTTP_TOKEN",
]);
/**
 * OpenSSL's certificate verification failures as Node names them; the handshake's other failures are
 * `ERR_SSL_*` and `ERR_TLS_*` (a host name not in the certificate among them).
 */
const CERTIFICATE_CODES = new Set([
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_DECRYPT_CERT_SIGNATURE",
  "UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY",
  "CERT_SIGNATURE_FAILURE",
  "CERT_NOT_YET_VALID",
  "CERT_HAS_EXPIRED",
  "ERROR_IN_CERT_NOT_BEFORE_FIELD",
  "ERROR_IN_CERT_NOT_AFTER_FIELD",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_CHAIN_TOO_LONG",
  "CERT_REVOKED",
  "INVALID_CA",
  "PATH_LENGTH_EXCEEDED",
  "INVALID_PURPOSE",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "HOSTNAME_MISMATCH",
]);

function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code: unknown = (error as { code?: unknown }).code;
  if (typeof code === "string") return code;
  // A connection attempt over several addresses fails with an AggregateError of each one's error.
  return error instanceof AggregateError ? errorCode(error.errors[0]) : undefined;
}

function failureOf(error: unknown, exchange: ExchangeSignal | undefined): ConnectionFailure {
  if (exchange?.end !== undefined) return exchange.end;
  if (error instanceof BodyStreamError) return "BodyFailed";
  const code = errorCode(error);
  if (code !== undefined && NOT_SENT_CODES.has(code)) return "NotSent";
  if (code !== undefined && CONNECT_CODES.has(code)) return "ConnectFailed";
  if (code !== undefined && (CERTIFICATE_CODES.has(code) || /^ERR_(SSL|TLS)_/.test(code))) return "TlsFailed";
  if (code !== undefined && TIMEOUT_CODES.has(code)) return "Timeout";
  return "Interrupted";
}

/** undici under the client: one keep-alive agent for every voter, and transport failures as ConnectionError. */
export class HttpTransport {
  private readonly agent: Agent;
  private readonly closing = new AbortController();
  private destroyed: Promise<void> | undefined;

  constructor(private readonly options: TransportOptions) {
    const { ca } = options.tls;
    this.agent = new Agent({
      connect: {
        timeout: options.connectTimeoutMs,
        ...(ca === undefined ? {} : { ca: typeof ca === "string" || Buffer.isBuffer(ca) ? ca : [...ca] }),
      },
      connections: options.connections,
    });
    // Every exchange under way listens to it: many at once are the client's ordinary load, not a leak.
    setMaxListeners(0, this.closing.signal);
  }

  /**
   * Sends `request` and returns the answer's status and headers. The exchange, its body included, ends
   * at the first of the caller's abort, the client's close and the call's deadline (`timeLeftMs`):
   * undici's own timeouts bound each wait, not the whole, so a body that trickles in never trips them.
   */
  async send(endpoint: string, request: OutgoingRequest): Promise<IncomingAnswer> {
    this.throwIfClosed(endpoint, request.commandId);
    const url = new URL(endpoint);
    const exchange = new ExchangeSignal(request.signal, this.closing.signal, request.timeLeftMs);
    try {
      const pending = this.agent.request({
        origin: url.origin,
        path: url.pathname.replace(/\/+$/, "") + request.path,
        method: request.method,
        headers: request.headers,
        body: toUndiciBody(request.body),
        signal: exchange.signal,
        headersTimeout: within(this.options.requestTimeoutMs, request.timeLeftMs),
        bodyTimeout: within(this.options.bodyTimeoutMs, request.timeLeftMs),
      });
      const { statusCode: status, headers, body } = await untilAborted(pending, exchange.signal);
      // Ended or dropped, the body closes, and the exchange has settled.
      body.once("close", () => exchange.release());
      return { endpoint, status, headers, body, exchange };
    } catch (error) {
      exchange.release();
      throw this.connectionError(error, endpoint, request, exchange);
    }
  }

  /**
   * Reads an answer's body to the end, as text, or undefined once it passes `maxBytes` (the rest is then
   * dropped); a broken or stalled body is a ConnectionError.
   */
  async readText(
    answer: IncomingAnswer,
    request: OutgoingRequest,
    maxBytes: number,
  ): Promise<string | undefined> {
    try {
      return await readBoundedText(answer.body, maxBytes);
    } catch (error) {
      throw this.connectionError(error, answer.endpoint, request, answer.exchange);
    } finally {
      answer.exchange.release();
    }
  }

  /** Whether close() was called. */
  get closed(): boolean {
    return this.closing.signal.aborted;
  }

  /** Aborts when close() is called. */
  get closedSignal(): AbortSignal {
    return this.closing.signal;
  }

  /** A ConnectionError `ClientClosed` for a request that was never sent, once close() was called. */
  throwIfClosed(endpoint: string, commandId: string | undefined): void {
    if (!this.closed) return;
    throw new ConnectionError(`the client was closed before the request to ${endpoint} was sent`, {
      reason: "ClientClosed",
      endpoint,
      commandId,
    });
  }

  /**
   * Ends every exchange under way (they fail with `ClientClosed`) and every one to come, and destroys
   * the connections rather than wait for answers no caller will read.
   */
  close(): Promise<void> {
    if (this.destroyed === undefined) {
      this.closing.abort(new Error("the client was closed"));
      this.destroyed = this.agent.destroy();
    }
    return this.destroyed;
  }

  private connectionError(
    error: unknown,
    endpoint: string,
    request: OutgoingRequest,
    exchange: ExchangeSignal | undefined,
  ): ConnectionError {
    const reason = failureOf(error, exchange);
    // The caller's own error, unwrapped: the tag only told it apart on its way through undici.
    const cause = error instanceof BodyStreamError ? error.cause : error;
    const detail = cause instanceof Error ? cause.message : String(cause);
    return new ConnectionError(`${request.method} ${endpoint}${request.path}: ${reason} (${detail})`, {
      reason,
      endpoint,
      commandId: request.commandId,
      cause,
      // Closed while the exchange was under way, its request may already have been written.
      ...(reason === "ClientClosed" ? { mayHaveReachedVoter: true } : {}),
    });
  }
}

/**
 * undici heeds an abort only once the request's connection attempt has ended, which may take the whole
 * connect timeout; the exchange ends at the abort. The request, marked aborted, is then never written,
 * and an answer that still comes is discarded.
 */
function untilAborted(
  pending: Promise<Dispatcher.ResponseData>,
  signal: AbortSignal,
): Promise<Dispatcher.ResponseData> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (answer) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) answer.body.destroy();
        else resolve(answer);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** A timeout cut to what the call has left; at least 1 ms, as undici reads 0 as no timeout at all. */
function within(timeoutMs: number, timeLeftMs: number | undefined): number {
  return timeLeftMs === undefined ? timeoutMs : Math.max(1, Math.min(timeoutMs, Math.ceil(timeLeftMs)));
}

function toUndiciBody(body: OutgoingBody | undefined): string | Uint8Array | Readable | null {
  if (body === undefined) return null;
  if (typeof body === "string" || body instanceof Uint8Array) return body;
  // Without a known length undici sends the stream chunked, which is the point of a streamed body.
  return Readable.from(tagged(body), { objectMode: false });
}

/** An error the caller's body stream threw, tagged to tell undici's rejection from a broken connection. */
class BodyStreamError extends Error {
  constructor(cause: unknown) {
    super("the request's body stream failed", { cause });
  }
}

/**
 * The caller's stream, its errors tagged. A chunked body cut short never ends in its last chunk, so no
 * voter can have taken the request, let alone applied it; resending it would fail the same way.
 */
async function* tagged(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  try {
    yield* body;
  } catch (error) {
    throw new BodyStreamError(error);
  }
}
