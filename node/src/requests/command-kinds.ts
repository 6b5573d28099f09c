/**
 * The route parameters each command kind carries (from the URL path), one kind per write route of the
 * contract. The body travels separately, as the payload. The HTTP edge names the kind of each write
 * route; the state machine (state/command-envelope.ts) carries it in the entry and applies it.
 */
export const COMMAND_KINDS = {
  "catalog.put": ["key"], // PUT /v1/catalog/{key}
  "catalog.delete": ["key"], // DELETE /v1/catalog/{key}
  transaction: [], // POST /v1/transactions
  "graph.putEdge": [], // PUT /v1/graph/edges
  "graph.deleteEdge": [], // DELETE /v1/graph/edges
  "queue.enqueue": ["queue"], // POST /v1/queues/{queue}/messages
  "queue.lease": ["queue"], // POST /v1/queues/{queue}/leases
  "queue.ack": ["queue", "messageId"], // POST .../messages/{messageId}/ack
  "queue.nack": ["queue", "messageId"], // POST .../messages/{messageId}/nack
  "queue.renew": ["queue", "messageId"], // POST .../messages/{messageId}/renew
  "queue.complete": ["queue", "messageId"], // POST .../messages/{messageId}/complete (processing effect)
  "subscription.put": ["name"], // PUT /v1/subscriptions/{name}
  "subscription.deliver": ["name"], // POST /v1/subscriptions/{name}/deliveries
  "subscription.ack": ["name", "deliveryId"], // POST .../deliveries/{deliveryId}/ack
  "subscription.complete": ["name", "deliveryId"], // POST .../deliveries/{deliveryId}/complete (projection)
  "membership.put": ["memberId"], // PUT /v1/membership/{memberId}
  "dispatch.append": ["channel"], // POST /v1/dispatch/{channel}
  "admin.putPrincipal": [], // POST /v1/admin/principals
  "admin.createKey": ["principalId"], // POST /v1/admin/principals/{principalId}/keys
  "admin.deleteKey": ["principalId", "keyId"], // DELETE /v1/admin/principals/{principalId}/keys/{keyId}
} as const satisfies Record<string, readonly ParamName[]>;

export type CommandKind = keyof typeof COMMAND_KINDS;

export type ParamName =
  | "key"
  | "queue"
  | "messageId"
  | "name"
  | "deliveryId"
  | "memberId"
  | "channel"
  | "principalId"
  | "keyId";

export type RouteParams = Readonly<Partial<Record<ParamName, string>>>;
