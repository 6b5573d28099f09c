export { buildHttpApp, HTTP_EDGE_DEFAULTS, type HttpEdgeLimits, type HttpServerOptions } from "./http-app.js";
export { createHttpServer, type HttpServer } from "./http-server.js";
export { READ_KINDS, type ReadKind, type ReadParamName, type ReadParams } from "./read-kinds.js";
export { ROUTES, type RouteSpec } from "./routes.js";
export type {
  CommandAnswer,
  CommandSubmission,
  HealthReport,
  Identity,
  LeaderHint,
  ReadRequest,
  VoterService,
} from "./voter-service.js";
