import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import type { CommandStageObserver } from "../admission/index.js";
import type { HttpMetrics } from "./http-metrics.js";
import type { NotableLineBudget } from "./notable-line-budget.js";
import type { RequestEdge } from "./request-edge.js";

/** The route label of requests no route matched, so unknown URLs never become label values. */
const UNMATCHED = "unmatched";
/** As much of a caller's User-Agent as a request line keeps: enough to tell callers apart. */
const MAX_USER_AGENT_CHARS = 200;

interface Watched {
  readonly observer: RequestObserver;
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  readonly edge: RequestEdge;
}

const WATCHED = new WeakMap<ServerResponse, Watched>();
/**
 * The responses not yet over on each connection. A response queued behind another on a connection
 * (pipelined requests) is not attached to its socket until its turn, so it hears neither 'finish' nor
 * 'close' if the connection closes first: its request is over then too.
 */
const OPEN_ON_SOCKET = new WeakMap<Socket, Set<ServerResponse>>();
/** Per connection to end once they are over, the answers still owed on it (endAfterOpenAnswers). */
const END_AFTER = new WeakMap<Socket, Set<ServerResponse>>();

/**
 * Ends `socket` once the answers still owed on it, to requests that arrived whole, are over, each of
 * them told to close its connection; false, doing nothing, when none is owed. For a connection whose
 * next request cannot be read: an answer to that one written now would read, to the client, as the
 * answer of the request before. (A request cut short, its body still arriving, is owed nothing: it
 * ends as aborted when the connection does.)
 */
export function endAfterOpenAnswers(socket: Socket): boolean {
  const owed = [...(OPEN_ON_SOCKET.get(socket) ?? [])].filter(
    (response) => WATCHED.get(response)?.request.raw.complete === true,
  );
  if (owed.length === 0) return false;
  for (const response of owed) if (!response.headersSent) response.shouldKeepAlive = false;
  END_AFTER.set(socket, new Set(owed));
  return true;
}

function onSocketClose(this: Socket): void {
  const open = OPEN_ON_SOCKET.get(this);
  OPEN_ON_SOCKET.delete(this);
  for (const response of open ?? []) ended(response, !response.writableFinished);
}

function onFinish(this: ServerResponse): void {
  ended(this, false);
}

function onClose(this: ServerResponse): void {
  ended(this, !this.writableFinished);
}

function ended(response: ServerResponse, aborted: boolean): void {
  response.off("finish", onFinish);
  response.off("close", onClose);
  const watched = WATCHED.get(response);
  if (watched === undefined) return;
  WATCHED.delete(response);
  const socket = watched.request.raw.socket;
  OPEN_ON_SOCKET.get(socket)?.delete(response);
  const owed = END_AFTER.get(socket);
  if (owed?.delete(response) && owed.size === 0) {
    END_AFTER.delete(socket);
    socket.destroySoon();
  }
  watched.observer.finished(watched.request, watched.reply, watched.edge, aborted);
}

/** `KeyLoad:Log:SlowRequestMs`'s default: a request as slow as this is worth a line at info. */
export const DEFAULT_SLOW_REQUEST_MS = 1_000;

/**
 * Once per request, when its response is over: the latency histogram and one structured log line. The
 * line names the route template, never the URL (keys are user data), and of the headers only the
 * caller's User-Agent (never the API key's).
 *
 * The line is at debug unless the request is worth an operator's attention: its client went away, the
 * voter answered 5xx, or it took `slowRequestMs` or more, within a budget of lines a second
 * (NotableLineBudget). A line for every request at info, as an access log, is work on every write that a
 * loaded leader can least spare (docs/benchmarks.md); the metrics count every request anyway, and etcd
 * and Consul too log requests only at debug or when slow.
 */
export class RequestObserver {
  constructor(
    private readonly metrics: HttpMetrics,
    /** The edge's logger, asked whether the line would be written before it is built. */
    private readonly logger: Pick<Logger, "isLevelEnabled">,
    private readonly stages: CommandStageObserver,
    private readonly slowRequestMs: number,
    private readonly budget: NotableLineBudget,
  ) {}

  /** Calls `finished` once, on the first of 'finish' (written) and 'close' (written, or connection gone). */
  watch(request: FastifyRequest, reply: FastifyReply, edge: RequestEdge): void {
    // Shared listeners and a table entry, not closures per request: this runs on every request.
    WATCHED.set(reply.raw, { observer: this, request, reply, edge });
    reply.raw.on("finish", onFinish);
    reply.raw.on("close", onClose);
    const socket = request.raw.socket;
    let open = OPEN_ON_SOCKET.get(socket);
    if (open === undefined) {
      if (socket.destroyed) {
        ended(reply.raw, true);
        return;
      }
      open = new Set();
      OPEN_ON_SOCKET.set(socket, open);
      socket.once("close", onSocketClose);
    }
    open.add(reply.raw);
  }

  /** For the shared listeners above; not called otherwise. */
  finished(request: FastifyRequest, reply: FastifyReply, edge: RequestEdge, aborted: boolean): void {
    edge.end(aborted);
    const now = performance.now();
    const durationMs = now - edge.startedAt;
    // A write the voter answered: the stages around the voter's own (queue, replicate, apply).
    if (edge.route?.type === "command" && edge.answeredAt > 0 && !aborted) {
      this.stages.observe(edge.route.lane, "edge", edge.calledAt - edge.startedAt);
      this.stages.observe(edge.route.lane, "respond", now - edge.answeredAt);
    }
    const route = edge.route === undefined ? UNMATCHED : edge.route.path;
    const status = aborted ? "aborted" : String(reply.statusCode);
    this.metrics.observe(request.method, route, status, durationMs / 1000);
    const notable = aborted || reply.statusCode >= 500 || durationMs >= this.slowRequestMs;
    const skipped = notable && this.logger.isLevelEnabled("info") ? this.budget.take() : null;
    const level = skipped === null ? "debug" : "info";
    if (!this.logger.isLevelEnabled(level)) return;
    request.log[level](
      {
        ...(skipped ? { notableLinesAtDebug: skipped } : {}),
        method: request.method,
        route,
        status: aborted ? null : reply.statusCode,
        aborted,
        durationMs: Math.round(durationMs * 1000) / 1000,
        commandId: edge.commandId,
        tenantId: edge.identity?.tenantId,
        principalId: edge.identity?.principalId,
        userAgent: request.headers["user-agent"]?.slice(0, MAX_USER_AGENT_CHARS),
      },
      "request",
    );
  }
}
