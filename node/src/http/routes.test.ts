import { COMMAND_ID_PATTERN, PATH_PARAM_SCHEMAS, ROUTE_LANES, ROUTE_PATHS } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { COMMAND_KINDS } from "../requests/command-kinds.js";
import { checkCommandId, checkName, checkScopeId } from "../requests/identifiers.js";
import { CLUSTER_KINDS } from "./cluster-kinds.js";
import { READ_KINDS } from "./read-kinds.js";
import { ROUTES } from "./routes.js";

/** Contract section 4's route table (with section 3's admin routes), written out as the contract does. */
const CONTRACT_ROUTES = [
  "PUT /v1/catalog/{key}",
  "DELETE /v1/catalog/{key}",
  "POST /v1/transactions",
  "PUT /v1/graph/edges",
  "DELETE /v1/graph/edges",
  "POST /v1/queues/{queue}/messages",
  "POST /v1/queues/{queue}/messages/{messageId}/complete",
  "PUT /v1/subscriptions/{name}",
  "POST /v1/subscriptions/{name}/deliveries/{deliveryId}/complete",
  "POST /v1/admin/principals",
  "POST /v1/admin/principals/{principalId}/keys",
  "DELETE /v1/admin/principals/{principalId}/keys/{keyId}",
  "GET /v1/catalog/{key}",
  "GET /v1/commands/{commandId}",
  "GET /v1/admin/admission",
  "POST /v1/catalog/bulk-get",
  "POST /v1/query",
  "POST /v1/search",
  "POST /v1/graph/traverse",
  "POST /v1/queues/{queue}/leases",
  "POST /v1/queues/{queue}/messages/{messageId}/ack",
  "POST /v1/queues/{queue}/messages/{messageId}/nack",
  "POST /v1/queues/{queue}/messages/{messageId}/renew",
  "POST /v1/subscriptions/{name}/deliveries",
  "POST /v1/subscriptions/{name}/deliveries/{deliveryId}/ack",
  "PUT /v1/membership/{memberId}",
  "GET /v1/membership",
  "POST /v1/dispatch/{channel}",
  "GET /v1/dispatch/{channel}",
  "GET /health/live",
  "GET /health/ready",
  "GET /metrics",
];
/** The administration of the Raft configuration, which section 8's bootstrap and rejoin need. */
const CLUSTER_ROUTES = [
  "GET /v1/admin/cluster/members",
  "POST /v1/admin/cluster/members",
  "POST /v1/admin/cluster/members/{clusterMemberId}/promote",
  "DELETE /v1/admin/cluster/members/{clusterMemberId}",
  "POST /v1/admin/cluster/leader",
];
/** What the project adds to the contract: the API document, the cluster's membership and leadership. */
const ADDED_ROUTES = ["GET /openapi.json", ...CLUSTER_ROUTES];

const HEAVY_READS = [
  "POST /v1/catalog/bulk-get",
  "POST /v1/query",
  "POST /v1/search",
  "POST /v1/graph/traverse",
];
// Replacing a voter must not wait behind a flood of data.
const CONTROL_ROUTES = [...CONTRACT_ROUTES.slice(19, 29), ...CLUSTER_ROUTES];

const name = (route: { method: string; path: string }) => `${route.method} ${route.path}`;
const sorted = (values: Iterable<string>) => [...values].sort();

describe("the route table", () => {
  it("has every route of the contract once, and the API document", () => {
    const names = ROUTES.map(name);
    expect(new Set(names).size).toBe(names.length);
    expect(sorted(names)).toEqual(sorted([...CONTRACT_ROUTES, ...ADDED_ROUTES]));
  });

  it("serves each kind at the contract's method and path, where the client sends it", () => {
    for (const route of ROUTES) {
      expect({ method: route.method, path: route.path }, route.kind).toEqual(ROUTE_PATHS[route.kind]);
    }
  });

  it("has a route for every kind of the contract's path table, and only those", () => {
    expect(sorted(ROUTES.map((route) => route.kind))).toEqual(sorted(Object.keys(ROUTE_PATHS)));
  });

  it("has one route per command kind, with the kind's route parameters", () => {
    const commands = ROUTES.filter((route) => route.type === "command");
    expect(sorted(commands.map((route) => route.kind))).toEqual(sorted(Object.keys(COMMAND_KINDS)));
    for (const route of commands) expect(route.params).toEqual([...COMMAND_KINDS[route.kind]]);
  });

  it("has one route per read kind, with the kind's route parameters", () => {
    const reads = ROUTES.filter((route) => route.type === "read");
    expect(sorted(reads.map((route) => route.kind))).toEqual(sorted(Object.keys(READ_KINDS)));
    for (const route of reads) expect(route.params).toEqual([...READ_KINDS[route.kind]]);
  });

  it("has one route per membership change, with the change's route parameters", () => {
    const changes = ROUTES.filter((route) => route.type === "cluster");
    expect(sorted(changes.map((route) => route.kind))).toEqual(sorted(Object.keys(CLUSTER_KINDS)));
    for (const route of changes) expect(route.params).toEqual([...CLUSTER_KINDS[route.kind]]);
  });

  it("puts each route in the contract's lane, pool, reservation and body cap", () => {
    for (const route of ROUTES) {
      if (route.type === "ops") continue;
      const control = CONTROL_ROUTES.includes(name(route));
      expect(route.pool, name(route)).toBe(control ? "control" : "data");
      expect(route.bodyCap, name(route)).toBe(control ? "MaxControlBodyBytes" : "MaxDataBodyBytes");
      const reservation = control ? "control" : HEAVY_READS.includes(name(route)) ? "heavy" : "data";
      expect(route.reservation, name(route)).toBe(reservation);
      if (route.type === "command") expect(route.lane).toBe(route.pool);
    }
  });

  it("gives each route the lane the contract's table gives it, which the client throttles by", () => {
    for (const route of ROUTES) {
      expect(route.type === "ops" ? null : route.pool, name(route)).toBe(ROUTE_LANES[route.kind]);
    }
  });

  it("asks admin for admin routes, writer or admin for writes, any role for reads", () => {
    for (const route of ROUTES) {
      if (route.type === "ops") continue;
      const expected = route.path.startsWith("/v1/admin/")
        ? ["admin"]
        : route.type === "command"
          ? ["writer", "admin"]
          : ["reader", "writer", "admin"];
      expect(route.roles, name(route)).toEqual(expected);
    }
  });

  it("reads a body on every route but the GETs", () => {
    for (const route of ROUTES) {
      if (route.type === "ops") continue;
      expect(route.body === null, name(route)).toBe(route.method === "GET");
    }
  });

  it("answers 201 where the contract says so, and for enqueued messages", () => {
    const created = ROUTES.filter((route) => route.status === 201).map(name);
    expect(sorted(created)).toEqual(
      sorted([
        "POST /v1/admin/principals",
        "POST /v1/admin/principals/{principalId}/keys",
        "POST /v1/queues/{queue}/messages",
      ]),
    );
  });
});

describe("identifier patterns", () => {
  const samples = [
    "a",
    "A-z_0.9:x",
    "user@host",
    "a b",
    "a/b",
    "",
    "é",
    "x".repeat(128),
    "x".repeat(129),
    "x".repeat(256),
    "x".repeat(257),
    "a:b@c",
  ];
  const accepts = (check: () => unknown) => {
    try {
      check();
      return true;
    } catch {
      return false;
    }
  };
  const pattern = (schema: unknown) => new RegExp((schema as { pattern: string }).pattern, "u");

  it("agree with the state machine's checks, so the edge refuses exactly what it would", () => {
    for (const sample of samples) {
      expect(pattern(PATH_PARAM_SCHEMAS.channel).test(sample), sample).toBe(
        accepts(() => checkName("n", sample)),
      );
      expect(pattern(PATH_PARAM_SCHEMAS.principalId).test(sample), sample).toBe(
        accepts(() => checkScopeId("p", sample)),
      );
      expect(new RegExp(COMMAND_ID_PATTERN).test(sample), sample).toBe(accepts(() => checkCommandId(sample)));
    }
  });
});
