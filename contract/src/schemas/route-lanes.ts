import type { Lane } from "../error-codes.js";
import type { RouteKind } from "./route-paths.js";

/**
 * The lane of every route (contract section 4): its command lane and HTTP pool, which the table gives
 * the same for every route, or null for the operations routes, which are outside admission. A client
 * throttles each lane apart, as the voters admit each from a reserve of its own. The voter's route
 * table (node/src/http/routes.ts) gives each route the same pool.
 */
export const ROUTE_LANES = {
  "catalog.put": "data",
  "catalog.delete": "data",
  transaction: "data",
  "graph.putEdge": "data",
  "graph.deleteEdge": "data",
  "queue.enqueue": "data",
  "queue.complete": "data",
  "subscription.put": "data",
  "subscription.complete": "data",
  "admin.putPrincipal": "data",
  "admin.createKey": "data",
  "admin.deleteKey": "data",
  "catalog.get": "data",
  "command.get": "data",
  "admin.admissionStatus": "data",
  // The Raft configuration's administration: replacing a voter must not wait behind a flood of data.
  "cluster.members": "control",
  "cluster.addLearner": "control",
  "cluster.promote": "control",
  "cluster.remove": "control",
  "cluster.transferLeader": "control",
  "catalog.bulkGet": "data",
  query: "data",
  search: "data",
  "graph.traverse": "data",
  "queue.lease": "control",
  "queue.ack": "control",
  "queue.nack": "control",
  "queue.renew": "control",
  "subscription.deliver": "control",
  "subscription.ack": "control",
  "membership.put": "control",
  "membership.list": "control",
  "dispatch.append": "control",
  "dispatch.read": "control",
  "health.live": null,
  "health.ready": null,
  metrics: null,
  openapi: null,
} as const satisfies Readonly<Record<RouteKind, Lane | null>>;
