import type { IncomingHttpHeaders } from "node:http";
import { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import type { ClientTlsOptions } from "./client-options.js";
import { ConnectionError, type ConnectionFailure } from "./errors/connection-error.js";

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
   * How long the call it belongs to may still take: the exchange then waits no longer than this for
   * the answer's headers, nor between two chunks of its body, and when its connection attempt and its
   * wait for the headers could together outlast it, no longer than this at all. Unbounded when absent.
   */
  readonly timeLeftMs?: number;
}

/** The answer's status line and headers; the body is still unread. */
export interface IncomingAnswer {
  readonly endpoint: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Dispatcher.ResponseData["body"];
  /** Aborts the exchange, body included, at the call's deadline, when it needed one (`timeLeftMs`). */
  readonly deadline?: AbortSignal;
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

function failureOf(
  error: unknown,
  signal: AbortSignal | undefined,
  deadline: AbortSignal | undefined,
): ConnectionFailure {
  if (signal?.aborted) return "Aborted";
  if (deadline?.aborted) return "Timeout";
  const code = errorCode(error);
  if (code !== undefined && CONNECT_CODES.has(code)) return "ConnectFailed";
  if (code !== undefined && (CERTIFICATE_CODES.has(code) || /^ERR_(SSL|TLS)_/.test(code))) return "TlsFailed";
  if (code !== undefined && TIMEOUT_CODES.has(code)) return "Timeout";
  return "Interrupted";
}

/** undici under the client: one keep-alive agent for every voter, and transport failures as ConnectionError. */
export class HttpTransport {
  private readonly agent: Agent;

  constructor(private readonly options: TransportOptions) {
    const { ca } = options.tls;
    this.agent = new Agent({
      connect: {
        timeout: options.connectTimeoutMs,
        ...(ca === undefined ? {} : { ca: typeof ca === "string" || Buffer.isBuffer(ca) ? ca : [...ca] }),
      },
      connections: options.connections,
    });
  }

  async send(endpoint: string, request: OutgoingRequest): Promise<IncomingAnswer> {
    const url = new URL(endpoint);
    const deadline = this.deadline(request.timeLeftMs);
    const signal =
      deadline === undefined || request.signal === undefined
        ? (deadline ?? request.signal)
        : AbortSignal.any([request.signal, deadline]);
    try {
      const pending = this.agent.request({
        origin: url.origin,
        path: url.pathname.replace(/\/+$/, "") + request.path,
        method: request.method,
        headers: request.headers,
        body: toUndiciBody(request.body),
        signal: signal ?? null,
        headersTimeout: within(this.options.requestTimeoutMs, request.timeLeftMs),
        bodyTimeout: within(this.options.bodyTimeoutMs, request.timeLeftMs),
      });
      const answer = await (signal === undefined ? pending : untilAborted(pending, signal));
      const { statusCode: status, headers, body } = answer;
      return deadline === undefined
        ? { endpoint, status, headers, body }
        : { endpoint, status, headers, body, deadline };
    } catch (error) {
      throw this.connectionError(error, endpoint, request, deadline);
    }
  }

  /** Reads an answer's body to the end, as text; a broken or stalled body is a ConnectionError. */
  async readText(answer: IncomingAnswer, request: OutgoingRequest): Promise<string> {
    try {
      return await answer.body.text();
    } catch (error) {
      throw this.connectionError(error, answer.endpoint, request, answer.deadline);
    }
  }

  /**
   * undici's connect timeout is the agent's, and runs before the wait for the headers starts: an
   * exchange with less time left than the two together gets a signal that ends it at the call's
   * deadline. One with more (a call's first attempts, with the defaults) needs none, and pays no timer.
   */
  private deadline(timeLeftMs: number | undefined): AbortSignal | undefined {
    if (
      timeLeftMs === undefined ||
      timeLeftMs >= this.options.connectTimeoutMs + this.options.requestTimeoutMs
    ) {
      return undefined;
    }
    return AbortSignal.timeout(Math.max(1, Math.ceil(timeLeftMs)));
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private connectionError(
    error: unknown,
    endpoint: string,
    request: OutgoingRequest,
    deadline: AbortSignal | undefined,
  ): ConnectionError {
    const reason = failureOf(error, request.signal, deadline);
    const detail = error instanceof Error ? error.message : String(error);
    return new ConnectionError(`${request.method} ${endpoint}${request.path}: ${reason} (${detail})`, {
      reason,
      endpoint,
      commandId: request.commandId,
      cause: error,
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
  if (typeof body === "string" || body instanceof Uint8Array || body instanceof Readable) return body;
  // Without a known length undici sends the stream chunked, which is the point of a streamed body.
  return Readable.from(body, { objectMode: false });
}
