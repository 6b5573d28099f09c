import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../keyload-error.js";
import { ROUTE_PATHS, type RouteKind, type RouteParams, routePath } from "./route-paths.js";
import { PATH_PARAM_SCHEMAS } from "./route-schemas.js";

/** What a caller without the types can pass: the compiler refuses these, the function must too. */
function untyped<K extends RouteKind>(params: Record<string, unknown>): RouteParams<K> {
  return params as unknown as RouteParams<K>;
}

describe("routePath", () => {
  it("percent-encodes a parameter as one segment: slash, space, percent and non-ASCII", () => {
    const key = "a/b c%d é😀?#";
    const path = routePath("catalog.get", { key });
    expect(path).toBe("/v1/catalog/a%2Fb%20c%25d%20%C3%A9%F0%9F%98%80%3F%23");
    expect(decodeURIComponent(path.slice("/v1/catalog/".length))).toBe(key);
  });

  it("fills every parameter of a route, each in its place", () => {
    expect(routePath("queue.ack", { queue: "orders/eu", messageId: "m 1" })).toBe(
      "/v1/queues/orders%2Feu/messages/m%201/ack",
    );
    expect(routePath("admin.deleteKey", { principalId: "svc@host", keyId: "k%1" })).toBe(
      "/v1/admin/principals/svc%40host/keys/k%251",
    );
  });

  it("gives a route without parameters its path, with or without an empty object", () => {
    expect(routePath("openapi")).toBe("/openapi.json");
    expect(routePath("query", {})).toBe("/v1/query");
  });

  it("throws InvalidArgumentError for a missing parameter rather than build another route's path", () => {
    const call = () => routePath("queue.ack", untyped<"queue.ack">({ queue: "q" }));
    expect(call).toThrow(InvalidArgumentError);
    expect(call).toThrow(
      expect.objectContaining({
        code: "InvalidArgument",
        status: 400,
        reason: "MissingPathParameter",
        details: { kind: "queue.ack", parameter: "messageId" },
      }),
    );
    expect(() => routePath("catalog.get", untyped<"catalog.get">({ key: 7 }))).toThrow(InvalidArgumentError);
    expect(() => routePath("nope" as RouteKind, {} as RouteParams<RouteKind>)).toThrow(InvalidArgumentError);
  });

  it("throws InvalidArgumentError for a parameter with a lone surrogate, which has no UTF-8 encoding", () => {
    for (const key of ["a\ud800", "\udc00b", "\udc00\ud800"]) {
      const call = () => routePath("catalog.get", { key });
      expect(call, JSON.stringify(key)).toThrow(InvalidArgumentError);
      expect(call).toThrow(
        expect.objectContaining({
          reason: "InvalidParameter",
          details: { kind: "catalog.get", parameter: "key" },
        }),
      );
    }
  });

  it("takes exactly the route's parameters (checked by the compiler)", () => {
    const probes = [
      // @ts-expect-error a route with parameters needs them
      () => routePath("catalog.get"),
      // @ts-expect-error a missing parameter
      () => routePath("queue.ack", { queue: "q" }),
      // @ts-expect-error a parameter of another route
      () => routePath("catalog.get", { key: "k", queue: "q" }),
      // @ts-expect-error a route without parameters takes none
      () => routePath("query", { key: "k" }),
    ];
    expect(probes).toHaveLength(4);
  });
});

describe("ROUTE_PATHS", () => {
  it("names only parameters the contract has a schema for", () => {
    for (const { path } of Object.values(ROUTE_PATHS)) {
      for (const [, name] of path.matchAll(/\{([^}]*)\}/g)) {
        expect(Object.keys(PATH_PARAM_SCHEMAS), path).toContain(name);
      }
    }
  });

  it("has each method and path once", () => {
    const routes = Object.values(ROUTE_PATHS).map(({ method, path }) => `${method} ${path}`);
    expect(new Set(routes).size).toBe(routes.length);
  });
});
