import {
  ApiDocumentSchema,
  DISPATCH_QUERY_SCHEMAS,
  HealthSchema,
  type Lane,
  MetricsSchema,
  REQUEST_BODY_SCHEMAS,
  RESPONSE_SCHEMAS,
  type RequestBodyKind,
  ROUTE_PATHS,
  type RouteKind,
  type WireSchema,
} from "@keyload/contract";
import type { HttpAdmissionProperty, HttpRequestKind } from "../admission/index.js";
import type { CommandKind, ParamName } from "../requests/command-kinds.js";
import { ADMIN_ROLES, COMMAND_ROLES, READ_ROLES, type Role } from "../requests/roles.js";
import type { ClusterKind, ClusterParamName } from "./cluster-kinds.js";
import type { ReadKind, ReadParamName } from "./read-kinds.js";

/**
 * The path parameters of the kinds. Each is validated and documented with the contract's schema of that
 * name (PATH_PARAM_SCHEMAS), which http-app.ts and openapi.ts index by it: one without fails to compile.
 */
export type PathParamName = ParamName | ReadParamName | ClusterParamName;

export type HttpMethod = "GET" | "PUT" | "POST" | "DELETE";
export type BodyCapProperty = Extract<HttpAdmissionProperty, "MaxDataBodyBytes" | "MaxControlBodyBytes">;

/** The admission columns of the contract's route table (section 4). */
interface Admission {
  /** The HTTP pool the request's slot comes from. */
  readonly pool: Lane;
  /** What the slot models: 64 MiB working space (heavy), 8 MiB (data) or none (control). */
  readonly reservation: HttpRequestKind;
  /** The configured limit that caps the body, read while the body is. */
  readonly bodyCap: BodyCapProperty;
}

interface Documented {
  readonly method: HttpMethod;
  /** The contract's path; parameters in braces. */
  readonly path: string;
  readonly summary: string;
  readonly status: 200 | 201;
  readonly response: WireSchema;
}

interface ApiRouteFields extends Documented, Admission {
  readonly params: readonly PathParamName[];
  /** Any of these roles may call the route. */
  readonly roles: readonly Role[];
  /** The route acts on the whole cluster, not on the caller's tenant: tenant `system`'s principals only. */
  readonly clusterWide: boolean;
  /** The body's schema; null for a route that reads no body (GET). */
  readonly body: WireSchema | null;
  /** The query-string parameters the route reads; the voter sees only these. */
  readonly query: Readonly<Record<string, WireSchema>>;
}

/** A write: one command, submitted under the `KeyLoad-Command-Id` header. */
export interface CommandRoute extends ApiRouteFields {
  readonly type: "command";
  readonly kind: CommandKind;
  readonly lane: Lane;
}

export interface ReadRoute extends ApiRouteFields {
  readonly type: "read";
  readonly kind: ReadKind;
}

/** A change of the Raft configuration (cluster-kinds.ts): no command ID, answered once applied. */
export interface ClusterRoute extends ApiRouteFields {
  readonly type: "cluster";
  readonly kind: ClusterKind;
}

export type OpsKind = "health.live" | "health.ready" | "metrics" | "openapi";

/**
 * Health, metrics and the API document: no HTTP pool, so they answer while the pools are full. Health
 * needs no key; the others, like every public route but health (contract section 3), need a key of any
 * role.
 */
export interface OpsRoute extends Documented {
  readonly type: "ops";
  readonly kind: OpsKind;
  readonly contentType: string;
  readonly keyed: boolean;
}

export type ApiRoute = CommandRoute | ReadRoute | ClusterRoute;
export type RouteSpec = ApiRoute | OpsRoute;

const DATA: Admission = { pool: "data", reservation: "data", bodyCap: "MaxDataBodyBytes" };
const HEAVY: Admission = { pool: "data", reservation: "heavy", bodyCap: "MaxDataBodyBytes" };
const CONTROL: Admission = { pool: "control", reservation: "control", bodyCap: "MaxControlBodyBytes" };

/**
 * The kinds of `Kind` whose route the contract's table (ROUTE_PATHS) gives one of `Method`: each route's
 * method and path come from there, where the client reads them too. `Kind` must be route kinds, so a
 * kind the voter serves that is missing from the table fails to compile.
 */
type Served<Kind extends RouteKind, Method extends HttpMethod> = {
  [K in Kind]: (typeof ROUTE_PATHS)[K]["method"] extends Method ? K : never;
}[Kind];

function pathParams(path: string): PathParamName[] {
  return [...path.matchAll(/\{([A-Za-z]+)\}/g)].map((match) => match[1] as PathParamName);
}

function command(
  kind: Served<CommandKind, Exclude<HttpMethod, "GET">>,
  admission: Admission,
  summary: string,
  status: 200 | 201 = 200,
): CommandRoute {
  const { method, path } = ROUTE_PATHS[kind];
  return {
    type: "command",
    method,
    path,
    kind,
    lane: admission.pool,
    ...admission,
    params: pathParams(path),
    // The state machine checks the same roles again when the command applies.
    roles: COMMAND_ROLES[kind],
    clusterWide: false,
    body: REQUEST_BODY_SCHEMAS[kind],
    query: {},
    status,
    response: RESPONSE_SCHEMAS[kind],
    summary,
  };
}

/** Reads of the cluster itself: every tenant's admission usage, the Raft configuration. */
const CLUSTER_WIDE_READS: ReadonlySet<ReadKind> = new Set(["admin.admissionStatus", "cluster.members"]);

function read(
  kind: ReadKind,
  admission: Admission,
  roles: readonly Role[],
  summary: string,
  body: WireSchema | null,
  query: Readonly<Record<string, WireSchema>> = {},
): ReadRoute {
  const { method, path } = ROUTE_PATHS[kind];
  return {
    type: "read",
    method,
    path,
    kind,
    ...admission,
    params: pathParams(path),
    roles,
    clusterWide: CLUSTER_WIDE_READS.has(kind),
    body,
    query,
    status: 200,
    response: RESPONSE_SCHEMAS[kind],
    summary,
  };
}

function getRead(
  kind: Served<ReadKind, "GET">,
  admission: Admission,
  roles: readonly Role[],
  summary: string,
  query?: Readonly<Record<string, WireSchema>>,
): ReadRoute {
  return read(kind, admission, roles, summary, null, query);
}

/** The heavy reads take their request as a JSON body. */
function postRead(kind: Served<ReadKind, "POST"> & RequestBodyKind, summary: string): ReadRoute {
  return read(kind, HEAVY, READ_ROLES, summary, REQUEST_BODY_SCHEMAS[kind]);
}

function ops(
  kind: Served<OpsKind, "GET">,
  contentType: string,
  response: WireSchema,
  summary: string,
): OpsRoute {
  const { method, path } = ROUTE_PATHS[kind];
  const keyed = kind !== "health.live" && kind !== "health.ready";
  return { type: "ops", method, path, kind, contentType, status: 200, response, summary, keyed };
}

/**
 * Membership changes take the control pool: replacing a voter must not wait behind a flood of data.
 * Repeating one is safe (it names the configuration it wants), so it carries no command ID.
 */
function cluster(kind: Served<ClusterKind, "POST" | "DELETE">, summary: string): ClusterRoute {
  const { method, path } = ROUTE_PATHS[kind];
  return {
    type: "cluster",
    method,
    path,
    kind,
    ...CONTROL,
    params: pathParams(path),
    roles: ADMIN_ROLES,
    clusterWide: true,
    body: REQUEST_BODY_SCHEMAS[kind],
    query: {},
    status: 200,
    response: RESPONSE_SCHEMAS[kind],
    summary,
  };
}

/**
 * Every route of the contract (section 4, with section 3's admin routes and section 7's status), in its
 * order, and the administration of the Raft configuration that the bootstrap and rejoin of section 8 need.
 * Each route's method and path are the contract's (ROUTE_PATHS), by its kind.
 */
export const ROUTES: readonly RouteSpec[] = [
  command("catalog.put", DATA, "Put a document"),
  command("catalog.delete", DATA, "Delete a document"),
  command("transaction", DATA, "Atomic puts, deletes, checks and outbox"),
  command("graph.putEdge", DATA, "Put a graph edge"),
  command("graph.deleteEdge", DATA, "Delete a graph edge"),
  command("queue.enqueue", DATA, "Enqueue a message", 201),
  command("queue.complete", DATA, "Processing effect: ack + writes"),
  command("subscription.put", DATA, "Create or change a subscription"),
  command("subscription.complete", DATA, "Projection effect: ack + writes"),
  command("admin.putPrincipal", DATA, "Create or update a principal", 201),
  command("admin.createKey", DATA, "Create an API key", 201),
  command("admin.deleteKey", DATA, "Revoke an API key"),
  getRead("catalog.get", DATA, READ_ROLES, "Read a document"),
  getRead("command.get", DATA, READ_ROLES, "A command's committed outcome"),
  getRead("admin.admissionStatus", DATA, ADMIN_ROLES, "Admission limits and usage"),
  getRead(
    "cluster.members",
    CONTROL,
    ADMIN_ROLES,
    "The Raft configuration: voters and learners, with match indexes on the leader",
  ),
  cluster("cluster.addLearner", "Add a member as a learner"),
  cluster("cluster.promote", "Promote a caught-up learner to voter"),
  cluster("cluster.remove", "Remove a member"),
  cluster("cluster.transferLeader", "Hand leadership to a voter; answered once it leads"),
  postRead("catalog.bulkGet", "Read many documents"),
  postRead("query", "Filter documents by key prefix and fields"),
  postRead("search", "Full-text search"),
  postRead("graph.traverse", "Breadth-first graph traversal"),
  command("queue.lease", CONTROL, "Lease visible messages"),
  command("queue.ack", CONTROL, "Acknowledge a leased message"),
  command("queue.nack", CONTROL, "Return a leased message"),
  command("queue.renew", CONTROL, "Extend a message's lease"),
  command("subscription.deliver", CONTROL, "Lease the next changes"),
  command("subscription.ack", CONTROL, "Acknowledge a delivery"),
  command("membership.put", CONTROL, "Write a membership row"),
  getRead("membership.list", CONTROL, READ_ROLES, "The membership table"),
  command("dispatch.append", CONTROL, "Append a directive"),
  getRead("dispatch.read", CONTROL, READ_ROLES, "Directives after N", DISPATCH_QUERY_SCHEMAS),
  ops("health.live", "application/json", HealthSchema, "Liveness"),
  ops("health.ready", "application/json", HealthSchema, "Readiness: member, leader known, caught up"),
  ops("metrics", "text/plain", MetricsSchema, "Prometheus metrics"),
  ops("openapi", "application/json", ApiDocumentSchema, "This API as an OpenAPI 3.1 document"),
];
