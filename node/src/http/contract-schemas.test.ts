import {
  ApiDocumentSchema,
  COMMAND_ID_HEADER_SCHEMA,
  DISPATCH_QUERY_SCHEMAS,
  ErrorBodySchema,
  HealthSchema,
  MetricsSchema,
  PATH_PARAM_SCHEMAS,
  REQUEST_BODY_SCHEMAS,
  RESPONSE_SCHEMAS,
} from "@keyload/contract";
import type { FastifySchema } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveHttpAdmissionOptions } from "../admission/index.js";
import { openApiDocument } from "./openapi.js";
import { ROUTES, type RouteSpec } from "./routes.js";
import { type HttpFixture, httpFixture } from "./test-fixtures/http-fixture.js";

/**
 * The edge validates and documents every route with the contract's schemas, the very objects the client
 * is typed by (@keyload/client's api-types.test.ts holds it to them): a schema written here instead
 * would let the voter and the client drift apart unnoticed.
 */

const name = (route: RouteSpec) => `${route.method} ${route.path}`;

/** Every schema value the contract exports for a route, with where it comes from. */
const CONTRACT_SCHEMAS = new Map<unknown, string>([
  ...Object.entries(REQUEST_BODY_SCHEMAS).map(([kind, schema]) => [schema, `body ${kind}`] as const),
  ...Object.entries(RESPONSE_SCHEMAS).map(([kind, schema]) => [schema, `answer ${kind}`] as const),
  ...Object.entries(PATH_PARAM_SCHEMAS).map(([param, schema]) => [schema, `param ${param}`] as const),
  ...Object.entries(DISPATCH_QUERY_SCHEMAS).map(([param, schema]) => [schema, `query ${param}`] as const),
  [HealthSchema, "health"],
  [MetricsSchema, "metrics"],
  [ApiDocumentSchema, "API document"],
]);

function fromContract(schema: unknown): boolean {
  return CONTRACT_SCHEMAS.has(schema);
}

/** A URL of the route, every path parameter filled with a valid value. */
function urlOf(route: RouteSpec): string {
  return route.path.replace(/\{([A-Za-z]+)\}/g, "x1");
}

describe("the route table", () => {
  it("takes every body, answer, parameter and query schema from the contract, by kind", () => {
    for (const route of ROUTES) {
      expect(fromContract(route.response), `${name(route)} answer`).toBe(true);
      if (route.type === "ops") continue;
      expect(route.response, name(route)).toBe(RESPONSE_SCHEMAS[route.kind]);
      if (route.body !== null) {
        expect(route.body, name(route)).toBe(
          REQUEST_BODY_SCHEMAS[route.kind as keyof typeof REQUEST_BODY_SCHEMAS],
        );
      }
      for (const schema of Object.values(route.query)) expect(fromContract(schema), name(route)).toBe(true);
    }
  });
});

describe("the routes the edge registers", () => {
  let fx: HttpFixture;
  /** What fastify validates each route with, as it holds it while answering. */
  const registered = new Map<RouteSpec, FastifySchema | undefined>();

  beforeAll(async () => {
    fx = httpFixture();
    fx.app.addHook("onResponse", async (request) => {
      const route = request.routeOptions.config.keyloadRoute;
      if (route !== undefined) registered.set(route, request.routeOptions.schema);
    });
    // Unauthenticated: every route answers (401 but for the keyless ones), and each is routed.
    for (const route of ROUTES) await fx.app.inject({ method: route.method, url: urlOf(route) });
  });

  afterAll(async () => {
    await fx.close();
  });

  it("are every route of the table", () => {
    expect([...registered.keys()].map(name).sort()).toEqual(ROUTES.map(name).sort());
  });

  it("validate bodies, path parameters and query strings with the contract's schemas only", () => {
    for (const [route, schema] of registered) {
      if (route.type === "ops") {
        expect(schema, name(route)).toBeUndefined();
        continue;
      }
      const { body, params, querystring, headers, response } = (schema ?? {}) as Record<string, unknown>;
      expect({ headers, response }, name(route)).toEqual({ headers: undefined, response: undefined });
      if (body !== undefined) expect(fromContract(body), `${name(route)} body`).toBe(true);
      expect(body === undefined, name(route)).toBe(route.body === null);
      for (const [kind, holder] of [
        ["params", params],
        ["querystring", querystring],
      ] as const) {
        const properties = (holder as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
        for (const [param, property] of Object.entries(properties)) {
          expect(fromContract(property), `${name(route)} ${kind} ${param}`).toBe(true);
        }
      }
      expect(Object.keys((params as { properties?: object } | undefined)?.properties ?? {})).toEqual(
        route.params,
      );
    }
  });
});

describe("the OpenAPI document", () => {
  const doc = JSON.parse(JSON.stringify(openApiDocument(ROUTES, resolveHttpAdmissionOptions()))) as {
    paths: Record<string, Record<string, Record<string, unknown>>>;
    components: { schemas: Record<string, unknown>; parameters: Record<string, { schema: unknown }> };
  };
  const json = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as unknown;

  it("documents each route's body and answer as the contract's schemas", () => {
    for (const route of ROUTES) {
      const operation = doc.paths[route.path]?.[route.method.toLowerCase()] as {
        requestBody?: { content: Record<string, { schema: unknown }> };
        responses: Record<string, { content: Record<string, { schema: unknown }> }>;
      };
      const answer = Object.values(operation.responses[String(route.status)]?.content ?? {})[0]?.schema;
      expect(answer, name(route)).toEqual(json(route.response));
      if (route.type === "ops") continue;
      expect(answer, name(route)).toEqual(json(RESPONSE_SCHEMAS[route.kind]));
      const body = operation.requestBody?.content["application/json"]?.schema;
      expect(body, name(route)).toEqual(route.body === null ? undefined : json(route.body));
    }
  });

  it("documents the error body and the command ID header as the contract's", () => {
    expect(doc.components.schemas.Error).toEqual(json(ErrorBodySchema));
    expect(doc.components.parameters.CommandId?.schema).toEqual(json(COMMAND_ID_HEADER_SCHEMA));
  });
});
