import { InvalidArgumentError } from "../keyload-error.js";

/**
 * The method and path of every route, by the kind of command, read, membership change or operation it
 * carries: written once, here, so the voter's route table (node/src/http/routes.ts) and the client build
 * the same URL from it and cannot drift apart. Paths are the contract's templates, parameters in braces;
 * each parameter's schema is PATH_PARAM_SCHEMAS' entry of that name.
 */

export type RouteMethod = "GET" | "PUT" | "POST" | "DELETE";

interface RoutePathSpec {
  readonly method: RouteMethod;
  readonly path: `/${string}`;
}

/** In the order of the voter's route table, which is the contract's (section 4). */
export const ROUTE_PATHS = {
  "catalog.put": { method: "PUT", path: "/v1/catalog/{key}" },
  "catalog.delete": { method: "DELETE", path: "/v1/catalog/{key}" },
  transaction: { method: "POST", path: "/v1/transactions" },
  "graph.putEdge": { method: "PUT", path: "/v1/graph/edges" },
  "graph.deleteEdge": { method: "DELETE", path: "/v1/graph/edges" },
  "queue.enqueue": { method: "POST", path: "/v1/queues/{queue}/messages" },
  "queue.complete": { method: "POST", path: "/v1/queues/{queue}/messages/{messageId}/complete" },
  "subscription.put": { method: "PUT", path: "/v1/subscriptions/{name}" },
  "subscription.complete": {
    method: "POST",
    path: "/v1/subscriptions/{name}/deliveries/{deliveryId}/complete",
  },
  "admin.putPrincipal": { method: "POST", path: "/v1/admin/principals" },
  "admin.createKey": { method: "POST", path: "/v1/admin/principals/{principalId}/keys" },
  "admin.deleteKey": { method: "DELETE", path: "/v1/admin/principals/{principalId}/keys/{keyId}" },
  "catalog.get": { method: "GET", path: "/v1/catalog/{key}" },
  "command.get": { method: "GET", path: "/v1/commands/{commandId}" },
  "admin.admissionStatus": { method: "GET", path: "/v1/admin/admission" },
  "cluster.members": { method: "GET", path: "/v1/admin/cluster/members" },
  "cluster.addLearner": { method: "POST", path: "/v1/admin/cluster/members" },
  "cluster.promote": { method: "POST", path: "/v1/admin/cluster/members/{clusterMemberId}/promote" },
  "cluster.remove": { method: "DELETE", path: "/v1/admin/cluster/members/{clusterMemberId}" },
  "cluster.transferLeader": { method: "POST", path: "/v1/admin/cluster/leader" },
  "catalog.bulkGet": { method: "POST", path: "/v1/catalog/bulk-get" },
  query: { method: "POST", path: "/v1/query" },
  search: { method: "POST", path: "/v1/search" },
  "graph.traverse": { method: "POST", path: "/v1/graph/traverse" },
  "queue.lease": { method: "POST", path: "/v1/queues/{queue}/leases" },
  "queue.ack": { method: "POST", path: "/v1/queues/{queue}/messages/{messageId}/ack" },
  "queue.nack": { method: "POST", path: "/v1/queues/{queue}/messages/{messageId}/nack" },
  "queue.renew": { method: "POST", path: "/v1/queues/{queue}/messages/{messageId}/renew" },
  "subscription.deliver": { method: "POST", path: "/v1/subscriptions/{name}/deliveries" },
  "subscription.ack": { method: "POST", path: "/v1/subscriptions/{name}/deliveries/{deliveryId}/ack" },
  "membership.put": { method: "PUT", path: "/v1/membership/{memberId}" },
  "membership.list": { method: "GET", path: "/v1/membership" },
  "dispatch.append": { method: "POST", path: "/v1/dispatch/{channel}" },
  "dispatch.read": { method: "GET", path: "/v1/dispatch/{channel}" },
  "health.live": { method: "GET", path: "/health/live" },
  "health.ready": { method: "GET", path: "/health/ready" },
  metrics: { method: "GET", path: "/metrics" },
  openapi: { method: "GET", path: "/openapi.json" },
} as const satisfies Readonly<Record<string, RoutePathSpec>>;

export type RouteKind = keyof typeof ROUTE_PATHS;

/**
 * The parameter names in braces of a path template, read by the compiler from the literal type:
 * `"queue" | "messageId"` of `/v1/queues/{queue}/messages/{messageId}/ack`.
 */
export type TemplateParamName<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? Name | TemplateParamName<Rest>
  : never;

/** The path parameters of a route of `kind`. */
export type RouteParamName<K extends RouteKind> = TemplateParamName<(typeof ROUTE_PATHS)[K]["path"]>;

/**
 * A value for each of the route's parameters, and nothing else: a misspelt, missing or extra name fails
 * to compile. A route without parameters takes only an empty object.
 */
export type RouteParams<K extends RouteKind> = [RouteParamName<K>] extends [never]
  ? Readonly<Record<string, never>>
  : { readonly [Name in RouteParamName<K>]: string };

/** The params argument of routePath: required where the route has parameters, optional where it has none. */
export type RoutePathArgs<K extends RouteKind> =
  | [params: RouteParams<K>]
  | ([RouteParamName<K>] extends [never] ? [] : never);

const PARAM = /\{([^}]*)\}/g;

/**
 * The path of a route of `kind`, each `{name}` replaced by its value percent-encoded as one segment (a
 * key's `/` included), as the voter decodes it. A missing parameter, or an unknown kind, which only a
 * caller without the types can pass, throws InvalidArgumentError rather than build a path to elsewhere;
 * so does a parameter with a lone surrogate (reason `InvalidParameter`), which cannot be encoded.
 */
export function routePath<K extends RouteKind>(kind: K, ...[params]: RoutePathArgs<K>): string {
  if (!Object.hasOwn(ROUTE_PATHS, kind)) {
    throw new InvalidArgumentError(`${String(kind)} is not a route of the contract`, {
      reason: "UnknownRoute",
      details: { kind },
    });
  }
  const values: Readonly<Record<string, unknown>> = params ?? {};
  return ROUTE_PATHS[kind].path.replace(PARAM, (_match, name: string) => {
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    if (typeof value !== "string") {
      throw new InvalidArgumentError(`the route ${kind} needs its path parameter ${name} as a string`, {
        reason: "MissingPathParameter",
        details: { kind, parameter: name },
      });
    }
    try {
      return encodeURIComponent(value);
    } catch (error) {
      // A lone surrogate has no UTF-8 encoding, so no path can name it (and no voter could decode one).
      throw new InvalidArgumentError(`the path parameter ${name} of ${kind} holds a lone surrogate`, {
        reason: "InvalidParameter",
        details: { kind, parameter: name },
        cause: error,
      });
    }
  });
}
