import { performance } from "node:perf_hooks";
import { PATH_PARAM_SCHEMAS } from "@keyload/contract";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  LogController,
  type RouteHandlerMethod,
} from "fastify";
import type { Logger } from "pino";
import type { HttpAdmissionGovernor } from "../admission/index.js";
import { guardAnswerWrite } from "./answer-write-guard.js";
import { answerBelowFastify, answerClientError, continueBody } from "./below-fastify.js";
import { ClosingConnections } from "./closing-connections.js";
import { edgeGate } from "./edge-gate.js";
import { ErrorReplies } from "./error-replies.js";
import { DEFAULT_MAX_HTTP_CONNECTIONS, HttpConnections } from "./http-connections.js";
import { HttpMetrics } from "./http-metrics.js";
import { parseJsonBody } from "./json-body-parser.js";
import { DEFAULT_NOTABLE_LINES_PER_SECOND, NotableLineBudget } from "./notable-line-budget.js";
import { openApiDocument } from "./openapi.js";
import { RequestEdge } from "./request-edge.js";
import { DEFAULT_SLOW_REQUEST_MS, RequestObserver } from "./request-observer.js";
import { clusterHandler, commandHandler, opsHandler, readHandler } from "./route-handlers.js";
import { type ApiRoute, type PathParamName, ROUTES, type RouteSpec } from "./routes.js";
import type { VoterService } from "./voter-service.js";

/** Connection bounds of the public port; HTTP admission itself is the governor's. */
export interface HttpEdgeLimits {
  /**
   * Time to receive a whole request, headers and body. A request holds its HTTP slot while its body
   * arrives, so without this bound a slow client could hold a slot for as long as it likes.
   */
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  /**
   * How long a connection closed after refusing a body unread keeps reading and dropping what the
   * client still sends, so the client reads the refusal instead of a reset (lingering-close.ts).
   */
  readonly refusedBodyLingerMs: number;
  /**
   * The largest declared body a refusal reads and drops after its answer to keep the connection open,
   * as Go's server does up to 256 KiB; a larger one, or one of unknown length, closes it (lingering).
   */
  readonly refusedBodyDrainBytes: number;
  /**
   * How long HTTP admission's 429s wait before they are written (refusal-pacing.ts); 0 answers at once.
   * A request its pool has no slot for waits as long for one (HttpAdmissionGovernor.reserveOrWait) and
   * is refused only if none frees meanwhile.
   */
  readonly refusalDelayMs: number;
  /** The most open connections (`KeyLoad:Connections:MaxHttp`); one past it is closed at once. */
  readonly maxConnections: number;
  /** A request that takes at least this long is logged at info (`KeyLoad:Log:SlowRequestMs`). */
  readonly slowRequestMs: number;
  /** The most request lines at info a second (`KeyLoad:Log:NotableRequestLinesPerSecond`). */
  readonly notableRequestLinesPerSecond: number;
}

export const HTTP_EDGE_DEFAULTS: HttpEdgeLimits = {
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  refusedBodyLingerMs: 2_000,
  refusedBodyDrainBytes: 256 * 1024,
  refusalDelayMs: 250,
  maxConnections: DEFAULT_MAX_HTTP_CONNECTIONS,
  slowRequestMs: DEFAULT_SLOW_REQUEST_MS,
  notableRequestLinesPerSecond: DEFAULT_NOTABLE_LINES_PER_SECOND,
};

/** The certificate (chain) and private key the public port serves HTTPS with, PEM. */
export interface HttpTls {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export interface HttpServerOptions {
  readonly service: VoterService;
  readonly httpAdmission: HttpAdmissionGovernor;
  readonly logger: Logger;
  readonly limits?: Partial<HttpEdgeLimits>;
  /** Absent: plain HTTP. */
  readonly tls?: HttpTls;
}

const NODE_SERVER_OPTIONS = { joinDuplicateHeaders: true, requireHostHeader: false } as const;

/**
 * Node's own bounds on a request's arrival, for `requestTimeoutMs`. fastify sets the server's
 * `requestTimeout` only after making it, which leaves `headersTimeout` at Node's 60 s, and Node then
 * cuts no request short of that (a body trickled in held its slot 60 s and more); and Node looks for
 * late requests every 30 s by default, which ignored any bound below it.
 */
function requestTimeouts(requestTimeoutMs: number): {
  requestTimeout: number;
  headersTimeout: number;
  connectionsCheckingInterval: number;
} {
  return {
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(requestTimeoutMs / 4))),
  };
}

/** The longest percent-encoded key: 512 code points of 4 UTF-8 bytes, each byte written as %XX. */
const MAX_PARAM_CHARS = 512 * 4 * 3;

/** Paths of log fields that could hold a credential, censored should any log call ever pass one. */
const REDACTED = ["req.headers.authorization", "headers.authorization", "*.headers.authorization", "apiKey"];

/**
 * How the schemas are checked: types only, never coerced, defaulted or stripped. The payload the voter
 * gets is the text as received, so validation must judge that same text.
 */
export const SCHEMA_VALIDATION = {
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
  allowUnionTypes: true,
} as const;

/**
 * The voter's public HTTP API as a fastify app (not listening): the route table, the edge's first hook,
 * the body parser, the contract's error body on every path and the HTTP metrics. Its close begins with
 * fastify's `preClose`, or earlier with `closing.begin()`.
 */
export function buildHttpApp(
  options: HttpServerOptions,
  closing: ClosingConnections = new ClosingConnections(),
): FastifyInstance {
  const { service, httpAdmission: governor } = options;
  const limits = { ...HTTP_EDGE_DEFAULTS, ...options.limits };
  const connections = new HttpConnections();
  const metrics = new HttpMetrics(service.metricsRegistry, governor, connections);
  const replies = new ErrorReplies(service, metrics, limits, closing);

  const httpLogger = options.logger.child(
    { component: "http" },
    { redact: { paths: REDACTED, censor: "[redacted]" } },
  );
  const observer = new RequestObserver(
    metrics,
    httpLogger,
    service.commandStages,
    limits.slowRequestMs,
    new NotableLineBudget(limits.notableRequestLinesPerSecond),
  );
  const logger: FastifyBaseLogger = httpLogger;
  const serverOptions = { ...NODE_SERVER_OPTIONS, ...requestTimeouts(limits.requestTimeoutMs) };
  const app = Fastify({
    loggerInstance: logger,
    // RequestObserver writes the request lines; fastify's own would not name tenant or command.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    exposeHeadRoutes: false,
    // Draining is answered by the first hook, in the contract's error body.
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PARAM_CHARS },
    ajv: { customOptions: SCHEMA_VALIDATION },
    // Fastify answers a URL it cannot route (bad percent-encoding) before any hook runs.
    frameworkErrors: (error, request, reply) => {
      const edge = new RequestEdge(undefined, performance.now());
      request.keyloadEdge = edge;
      observer.watch(request, reply, edge);
      replies.send(request, reply, error, true);
    },
    clientErrorHandler: (error, socket) => answerClientError(error, socket),
    // Node keeps the first of two Authorization headers and drops the other: joined, two credentials
    // read as one malformed one, refused, rather than whichever came first. A missing Host is refused
    // by the first hook, in the contract's body, rather than by Node with an empty one.
    http: serverOptions,
    // An https.Server hands fastify the same IncomingMessage and ServerResponse as an http.Server, so
    // the app is typed as the plain one either way.
    ...(options.tls === undefined
      ? {}
      : { https: { cert: options.tls.cert, key: options.tls.key, ...serverOptions } }),
  });
  connections.watch(app.server, limits.maxConnections);
  closing.watch(app.server);
  answerBelowFastify(app.server, limits);

  app.decorateRequest("keyloadEdge", null);
  app.removeAllContentTypeParsers();
  // A stream parser, so fastify never reads a body itself (its bodyLimit applies only to bodies it
  // reads): the guard, sized to the request's reservation, is the one place that counts and cuts them.
  app.addContentTypeParser("application/json", parseJsonBody);
  app.setErrorHandler((error, request, reply) => replies.send(request, reply, error));
  app.addHook(
    "onRequest",
    edgeGate({
      service,
      governor,
      replies,
      observer,
      closing: () => closing.begun,
      behindClose: (request) => closing.isBehindClose(request),
      slotWaitMs: limits.refusalDelayMs,
    }),
  );
  // After the first hook admitted the request: a body that waits for `100 Continue` is invited only now.
  app.addHook("preParsing", (request, reply, payload, done) => {
    continueBody(request.raw, reply.raw);
    done(null, payload);
  });
  // Every answer, success or error, once the close has begun: it closes its connection after it. An
  // answer its client stops reading ends its connection.
  app.addHook("onSend", (request, reply, payload, done) => {
    closing.closeAfter(request.raw, reply.raw);
    guardAnswerWrite(reply.raw, request.raw.socket, limits.requestTimeoutMs);
    done(null, payload);
  });
  app.addHook("preClose", (done) => {
    closing.begin();
    done();
  });
  app.addHook("onClose", (_instance, done) => {
    metrics.unregister();
    done();
  });

  const openApiJson = JSON.stringify(openApiDocument(ROUTES, governor.limits));
  for (const route of ROUTES) registerRoute(app, route, service, openApiJson);
  return app;
}

function registerRoute(
  app: FastifyInstance,
  route: RouteSpec,
  service: VoterService,
  openApiJson: string,
): void {
  const url = route.path.replace(/\{([A-Za-z]+)\}/g, ":$1");
  const config = { keyloadRoute: route };
  if (route.type === "ops") {
    app.route({ method: route.method, url, config, handler: opsHandler(route, service, openApiJson) });
    return;
  }
  const schema = {
    ...(route.params.length === 0 ? {} : { params: paramsSchema(route.params) }),
    ...(route.body === null ? {} : { body: route.body }),
    ...(Object.keys(route.query).length === 0
      ? {}
      : { querystring: { type: "object", properties: route.query } }),
  };
  app.route({
    method: route.method,
    url,
    config,
    schema,
    handler: apiHandler(route, service),
  });
}

function apiHandler(route: ApiRoute, service: VoterService): RouteHandlerMethod {
  switch (route.type) {
    case "command":
      return commandHandler(route, service);
    case "read":
      return readHandler(route, service);
    case "cluster":
      return clusterHandler(route, service);
  }
}

function paramsSchema(names: readonly PathParamName[]): Record<string, unknown> {
  return {
    type: "object",
    properties: Object.fromEntries(names.map((name) => [name, PATH_PARAM_SCHEMAS[name]])),
    required: names,
  };
}
