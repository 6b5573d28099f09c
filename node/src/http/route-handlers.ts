import { UnavailableError } from "@keyload/contract";
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from "fastify";
import { JsonText } from "../requests/json-text.js";
import { EdgeClusterChange, EdgeCommandSubmission, EdgeReadRequest } from "./edge-submissions.js";
import { edgeOf } from "./request-edge.js";
import type { ClusterRoute, CommandRoute, OpsRoute, ReadRoute } from "./routes.js";
import type { CommandAnswer, VoterService } from "./voter-service.js";

export const COMMIT_INDEX_HEADER = "KeyLoad-Commit-Index";

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Serialized here rather than by fastify, which would send a string result as text/plain; a JsonText
 * (a read page the read worker built) is sent as it is.
 */
function sendJson(reply: FastifyReply, status: number, value: unknown): FastifyReply {
  const text = value instanceof JsonText ? value.text : (JSON.stringify(value) ?? "null");
  return reply.code(status).type(JSON_TYPE).send(text);
}

/** The route's path or query parameters, and only those: anything else a client adds is not passed on. */
function pick(source: unknown, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  if (typeof source !== "object" || source === null) return picked;
  for (const name of names) {
    const value: unknown = (source as Record<string, unknown>)[name];
    if (typeof value === "string") picked[name] = value;
  }
  return picked;
}

/** `{"commandId", ...result}`: a write's answer (`PUT /v1/catalog/{key}`: {commandId, key, version}). */
function commandBody(answer: CommandAnswer): Record<string, unknown> {
  const { commandId, result } = answer;
  if (typeof result === "object" && result !== null && !Array.isArray(result))
    return { commandId, ...result };
  return { commandId, result };
}

export function commandHandler(route: CommandRoute, service: VoterService): RouteHandlerMethod {
  return async function handleCommand(request: FastifyRequest, reply: FastifyReply) {
    const edge = edgeOf(request);
    // The parsed body served the route's schema; the command carries the body's bytes, and the parsed
    // copy would otherwise stay on the heap until the answer (CommandPayload says why that costs).
    request.body = undefined;
    const answer = await edge.call(() =>
      service.submitCommand(
        new EdgeCommandSubmission(edge, route.kind, pick(request.params, route.params), route.lane),
      ),
    );
    reply.header(COMMIT_INDEX_HEADER, String(answer.index));
    return sendJson(reply, route.status, commandBody(answer));
  };
}

export function readHandler(route: ReadRoute, service: VoterService): RouteHandlerMethod {
  const queryNames = Object.keys(route.query);
  return async function handleRead(request: FastifyRequest, reply: FastifyReply) {
    const edge = edgeOf(request);
    const value = await edge.call(() =>
      service.read(
        new EdgeReadRequest(
          edge,
          route.kind,
          pick(request.params, route.params),
          request.body,
          pick(request.query, queryNames),
          route.roles,
        ),
      ),
    );
    return sendJson(reply, route.status, value);
  };
}

export function clusterHandler(route: ClusterRoute, service: VoterService): RouteHandlerMethod {
  return async function handleClusterChange(request: FastifyRequest, reply: FastifyReply) {
    const edge = edgeOf(request);
    const value = await edge.call(() =>
      service.changeCluster(
        new EdgeClusterChange(
          edge,
          route.kind,
          pick(request.params, route.params),
          request.body,
          route.roles,
        ),
      ),
    );
    return sendJson(reply, route.status, value);
  };
}

export function opsHandler(route: OpsRoute, service: VoterService, openApiJson: string): RouteHandlerMethod {
  switch (route.kind) {
    case "health.live":
    case "health.ready":
      return async function handleHealth(_request: FastifyRequest, reply: FastifyReply) {
        const health = service.health();
        const up = route.kind === "health.live" ? health.live : health.ready;
        if (!up) {
          throw new UnavailableError(
            route.kind === "health.live" ? "the voter is not live" : "the voter is not ready",
            {
              reason: route.kind === "health.live" ? "NotLive" : "NotReady",
              details: health.detail,
            },
          );
        }
        return sendJson(reply, 200, health);
      };
    case "metrics":
      return async function handleMetrics(_request: FastifyRequest, reply: FastifyReply) {
        const registry = service.metricsRegistry;
        return reply
          .code(200)
          .type(registry.contentType)
          .send(await registry.metrics());
      };
    case "openapi":
      return async function handleOpenApi(_request: FastifyRequest, reply: FastifyReply) {
        return reply.code(200).type(JSON_TYPE).send(openApiJson);
      };
  }
}
