import { InternalError, InvalidArgumentError, KeyLoadError, ResourceExhaustedError } from "@keyload/contract";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import type { ClosingConnections } from "./closing-connections.js";
import type { HttpEdgeLimits } from "./http-app.js";
import type { HttpMetrics } from "./http-metrics.js";
import { LEADER_HEADER, leaderHeaderValue } from "./leader-header.js";
import { lingerOnClose } from "./lingering-close.js";
import { sendPaced } from "./refusal-pacing.js";
import type { VoterService } from "./voter-service.js";

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Turns every failure into the contract's error body (section 6) and writes it: typed errors as they
 * are, fastify's own errors mapped to the contract's codes, anything else as a 500 that says nothing
 * about its cause (which goes to the log instead).
 */
export class ErrorReplies {
  constructor(
    private readonly service: VoterService,
    private readonly metrics: HttpMetrics,
    private readonly limits: Pick<
      HttpEdgeLimits,
      "refusedBodyLingerMs" | "refusedBodyDrainBytes" | "refusalDelayMs"
    >,
    private readonly closing: Pick<ClosingConnections, "closeAfter" | "closeAfterUnreadBody">,
  ) {}

  /**
   * Answers `failure`. `unreadBody` (by default: the request did not arrive whole): the body was not
   * read to its end. A small one declared by its length is read and dropped once the answer is written
   * (Node's server does so for a body nobody read) and the connection stays open: under a flood of
   * retried refusals, a new connection per refusal costs both sides far more than the bytes. Any other
   * is not read: the connection is closed after the answer, lingering so the client still sending reads
   * the answer rather than a reset.
   */
  send(
    request: FastifyRequest,
    reply: FastifyReply,
    failure: unknown,
    unreadBody = !request.raw.complete,
  ): FastifyReply {
    let error = this.toKeyLoadError(request, failure);
    let delayMs = 0;
    const commandId = request.keyloadEdge?.commandId;
    if (commandId !== undefined && error.commandId === undefined) error = error.withCommandId(commandId);
    if (error instanceof ResourceExhaustedError) {
      if (error.retryAfterSeconds !== undefined) reply.header("retry-after", String(error.retryAfterSeconds));
      const { governor, pool } = error.details;
      if (governor === "http" && pool !== undefined) this.metrics.rejected(pool, error.reason);
      // Refused in the first hook, holding nothing: paced (refusal-pacing.ts).
      if (governor === "http" && error.status === 429) delayMs = this.pacingLeft(request);
    } else if (error.code === "Unavailable" || error.code === "UnknownWriteOutcome") {
      const leader = leaderHeaderValue(this.service.leaderHint());
      if (leader !== undefined) reply.header(LEADER_HEADER, leader);
    } else if (error.code === "Unauthenticated") {
      reply.header("www-authenticate", 'Bearer realm="keyload"');
    }
    if (unreadBody && !this.drains(request, error) && this.closing.closeAfterUnreadBody(request.raw)) {
      reply.header("connection", "close");
      lingerOnClose(request.raw.socket, this.limits.refusedBodyLingerMs);
    } else if (reply.hasHeader("connection")) {
      // Fastify closes the connection after any failure of the body parser, in case the client sends
      // more; a body read whole or drained leaves nothing more, and a request pipelined behind it is
      // answered. (Removing the header when it is not there would keep Node from writing its own.)
      // Once the server is closing, it is set again as the answer is written (below).
      reply.removeHeader("connection");
    }
    reply.code(error.status).type(JSON_TYPE);
    const body = JSON.stringify(error.toBody());
    sendPaced(reply, delayMs, () => {
      // As it is written, not before the pacing: the close may have begun meanwhile. Here too, not
      // only in the app's onSend hook, which fastify does not run for its framework errors.
      this.closing.closeAfter(request.raw, reply.raw);
      reply.send(body);
    });
    return reply;
  }

  /**
   * What is left of the pacing delay, counted from the first hook: time the request spent waiting for
   * a slot (HttpAdmissionGovernor.reserveOrWait) counts toward it, so a refusal at the end of a full
   * wait is answered at once, and one after a short wait (a tenant's or principal's cap) still waits.
   */
  private pacingLeft(request: FastifyRequest): number {
    const startedAt = request.keyloadEdge?.startedAt ?? performance.now();
    return Math.max(0, startedAt + this.limits.refusalDelayMs - performance.now());
  }

  /** Whether the unread body of a refused request is small enough to drain rather than close for. */
  private drains(request: FastifyRequest, error: KeyLoadError): boolean {
    if (error.reason === "BodyTooLarge") return false;
    const { headers } = request.raw;
    if (headers["transfer-encoding"] !== undefined) return false;
    const length = Number(headers["content-length"] ?? 0);
    return Number.isSafeInteger(length) && length <= this.limits.refusedBodyDrainBytes;
  }

  private toKeyLoadError(request: FastifyRequest, failure: unknown): KeyLoadError {
    if (failure instanceof KeyLoadError) {
      if (failure.code === "Internal") request.log.error({ err: failure }, "internal error");
      return failure;
    }
    const mapped = isFastifyError(failure) ? this.fromFastify(failure) : undefined;
    if (mapped !== undefined) return mapped;
    request.log.error({ err: failure }, "unexpected error");
    return new InternalError("the voter failed to answer this request");
  }

  private fromFastify(error: FastifyError): KeyLoadError | undefined {
    switch (error.code) {
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return new InvalidArgumentError("a request body must be application/json", {
          reason: "UnsupportedContentType",
        });
      case "FST_ERR_VALIDATION":
        return new InvalidArgumentError(error.message, {
          reason: VALIDATION_REASONS[error.validationContext ?? "body"],
        });
      case "FST_ERR_BAD_URL":
        return new InvalidArgumentError("the URL is not validly percent-encoded", { reason: "MalformedUrl" });
      case "FST_ERR_MAX_PARAM_LENGTH":
        return new InvalidArgumentError("a path parameter is longer than any valid one", {
          reason: "InvalidParameter",
        });
      default:
        // A client error fastify raises that this edge does not know yet: still the client's, still 4xx.
        return error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500
          ? new InvalidArgumentError("the request could not be processed as sent", {
              reason: "InvalidRequest",
            })
          : undefined;
    }
  }
}

const VALIDATION_REASONS: Readonly<Record<string, string>> = {
  body: "InvalidBody",
  params: "InvalidParameter",
  querystring: "InvalidQuery",
  headers: "InvalidHeader",
};

/** fastify's own errors, by their code's prefix: any other error with a code is the voter's, a 500. */
function isFastifyError(error: unknown): error is FastifyError {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("FST_");
}
