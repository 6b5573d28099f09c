import {
  COMMAND_ID_HEADER_SCHEMA,
  ErrorBodySchema,
  PATH_PARAM_SCHEMAS,
  type WireSchema,
} from "@keyload/contract";
import type { HttpAdmissionLimits } from "../admission/index.js";
import { COMMAND_ID_HEADER } from "./edge-gate.js";
import { LEADER_HEADER, LEADER_HEADER_DESCRIPTION } from "./leader-header.js";
import { COMMIT_INDEX_HEADER } from "./route-handlers.js";
import type { ApiRoute, OpsRoute, RouteSpec } from "./routes.js";

type Json = Readonly<Record<string, unknown>>;

const ref = (section: string, name: string): Json => ({ $ref: `#/components/${section}/${name}` });
const jsonContent = (schema: Json | WireSchema): Json => ({ "application/json": { schema } });

/** One reusable response per error the contract lists (section 6), by the name operations refer to. */
const ERRORS = {
  InvalidArgument: [400, "InvalidArgument: malformed JSON, wrong types, bad command ID, wrong content type"],
  Unauthenticated: [401, "Unauthenticated: no API key, or not a valid one"],
  PermissionDenied: [403, "PermissionDenied: the key's principal lacks the route's role"],
  NotFound: [404, "NotFound"],
  Conflict: [409, "CommandIdConflict (the ID committed with another route or body) or LeaseLost"],
  FailedPrecondition: [412, "FailedPrecondition: version or etag mismatch"],
  BodyTooLarge: [
    413,
    "ResourceExhausted, reason BodyTooLarge: a declared or chunked body over the route's cap",
  ],
  ResourceExhausted: [429, "ResourceExhausted: command or HTTP admission refused; retry after Retry-After"],
  Internal: [500, "Internal: the voter failed; nothing about the cause is shown"],
  Unavailable: [503, "Unavailable: no leader or no quorum; nothing was submitted"],
  UnknownWriteOutcome: [
    504,
    "UnknownWriteOutcome: the write may or may not have committed; retry with the same ID",
  ],
} as const satisfies Record<string, readonly [number, string]>;

type ErrorName = keyof typeof ERRORS;

const ERROR_HEADERS: Partial<Record<ErrorName, Json>> = {
  Unauthenticated: { "WWW-Authenticate": ref("headers", "WWW-Authenticate") },
  ResourceExhausted: { "Retry-After": ref("headers", "Retry-After") },
  Unavailable: { [LEADER_HEADER]: ref("headers", LEADER_HEADER) },
  UnknownWriteOutcome: { [LEADER_HEADER]: ref("headers", LEADER_HEADER) },
};

const API_ERRORS: readonly ErrorName[] = [
  "InvalidArgument",
  "Unauthenticated",
  "PermissionDenied",
  "NotFound",
  "BodyTooLarge",
  "ResourceExhausted",
  "Internal",
  "Unavailable",
];
const COMMAND_ERRORS: readonly ErrorName[] = [
  ...API_ERRORS,
  "Conflict",
  "FailedPrecondition",
  "UnknownWriteOutcome",
];
/** A membership change has no command ID to conflict with; asking again is safe. */
const CLUSTER_ERRORS: readonly ErrorName[] = [...API_ERRORS, "FailedPrecondition", "UnknownWriteOutcome"];

const ROUTE_ERRORS: Readonly<Record<ApiRoute["type"], readonly ErrorName[]>> = {
  command: COMMAND_ERRORS,
  read: API_ERRORS,
  cluster: CLUSTER_ERRORS,
};

function components(): Json {
  const responses: Record<string, Json> = {};
  for (const [name, [, description]] of Object.entries(ERRORS)) {
    const headers = ERROR_HEADERS[name as ErrorName];
    responses[name] = {
      description,
      ...(headers === undefined ? {} : { headers }),
      content: jsonContent(ref("schemas", "Error")),
    };
  }
  return {
    securitySchemes: {
      apiKey: { type: "http", scheme: "bearer", description: "Authorization: Bearer <apiKey>" },
    },
    schemas: { Error: ErrorBodySchema },
    parameters: {
      CommandId: { name: COMMAND_ID_HEADER, in: "header", required: true, schema: COMMAND_ID_HEADER_SCHEMA },
    },
    headers: {
      "Retry-After": {
        description:
          "Seconds to wait before retrying an admission refusal (the same command ID may be reused)",
        schema: { type: "integer", minimum: 0 },
      },
      [LEADER_HEADER]: { description: LEADER_HEADER_DESCRIPTION, schema: { type: "string" } },
      [COMMIT_INDEX_HEADER]: {
        description: "The Raft index of the entry that applied the command",
        schema: { type: "integer", minimum: 1 },
      },
      "WWW-Authenticate": { description: 'Bearer realm="keyload"', schema: { type: "string" } },
    },
    responses,
  };
}

function acceptsNoBody(schema: WireSchema): boolean {
  return Array.isArray(schema.type) && schema.type.includes("null");
}

function errorResponses(names: readonly ErrorName[]): Record<string, Json> {
  const responses: Record<string, Json> = {};
  for (const name of names) responses[String(ERRORS[name][0])] = ref("responses", name);
  return responses;
}

function apiOperation(route: ApiRoute, limits: HttpAdmissionLimits): Json {
  const command = route.type === "command";
  const parameters: Json[] = [
    ...route.params.map((name) => ({ name, in: "path", required: true, schema: PATH_PARAM_SCHEMAS[name] })),
    ...Object.entries(route.query).map(([name, schema]) => ({ name, in: "query", required: false, schema })),
    ...(command ? [ref("parameters", "CommandId")] : []),
  ];
  const admission =
    `${command ? `Command lane ${route.lane}; ` : ""}HTTP pool ${route.pool}, ${route.reservation} reservation; ` +
    `body cap ${route.bodyCap} (${limits[route.bodyCap]} bytes). Roles: ${route.roles.join(", ")}` +
    `${route.clusterWide ? ", of tenant system" : ""}.`;
  return {
    operationId: route.kind,
    summary: route.summary,
    description: admission,
    tags: [route.path.split("/")[2]],
    security: [{ apiKey: [] }],
    parameters,
    ...(route.body === null
      ? {}
      : { requestBody: { required: !acceptsNoBody(route.body), content: jsonContent(route.body) } }),
    responses: {
      [String(route.status)]: {
        description: "Success",
        ...(command ? { headers: { [COMMIT_INDEX_HEADER]: ref("headers", COMMIT_INDEX_HEADER) } } : {}),
        content: jsonContent(route.response),
      },
      ...errorResponses(ROUTE_ERRORS[route.type]),
    },
    "x-keyload": {
      kind: route.kind,
      ...(command ? { lane: route.lane } : {}),
      pool: route.pool,
      reservation: route.reservation,
      bodyCap: route.bodyCap,
      roles: route.roles,
    },
  };
}

function opsOperation(route: OpsRoute): Json {
  const health = route.kind === "health.live" || route.kind === "health.ready";
  return {
    operationId: route.kind,
    summary: route.summary,
    description: `${route.keyed ? "An API key of any role" : "No API key"}; spends no HTTP admission pool.`,
    tags: ["operations"],
    security: route.keyed ? [{ apiKey: [] }] : [],
    responses: {
      "200": { description: "Success", content: { [route.contentType]: { schema: route.response } } },
      ...errorResponses(health ? ["Unavailable"] : ["Unauthenticated"]),
    },
  };
}

/**
 * The API as an OpenAPI 3.1 document, generated from the route table so the two cannot drift apart: plain
 * JSON data, without the TypeBox markers (symbol keys) the contract's schemas carry.
 */
export function openApiDocument(routes: readonly RouteSpec[], limits: HttpAdmissionLimits): Json {
  return JSON.parse(JSON.stringify(document(routes, limits))) as Json;
}

function document(routes: readonly RouteSpec[], limits: HttpAdmissionLimits): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const operations = paths[route.path] ?? {};
    operations[route.method.toLowerCase()] =
      route.type === "ops" ? opsOperation(route) : apiOperation(route, limits);
    paths[route.path] = operations;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "KeyLoad voter API",
      version: "1",
      description:
        'A three-voter Raft-replicated store. Every error answers {"error":{"code","reason","message",' +
        '"commandId"?,"details"?}}. Writes carry KeyLoad-Command-Id; reads are linearizable.',
    },
    components: components(),
    paths,
  };
}
