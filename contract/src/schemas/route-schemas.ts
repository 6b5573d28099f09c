import { Type } from "@sinclair/typebox";
import { AdmissionStatusSchema } from "./admission-status.js";
import {
  BulkGetBodySchema,
  BulkGetResultSchema,
  DeleteDocumentBodySchema,
  DeleteResultSchema,
  DocumentSchema,
  PutDocumentBodySchema,
  PutResultSchema,
} from "./catalog.js";
import {
  AddLearnerBodySchema,
  ClusterLeaderTransferSchema,
  ClusterMemberChangeSchema,
  ClusterMembersSchema,
  TransferLeaderBodySchema,
} from "./cluster.js";
import { CommandOutcomeSchema } from "./command-outcome.js";
import { DeliveryRequestSchema } from "./delivery-request.js";
import { DispatchBodySchema, DispatchReadSchema, DispatchResultSchema } from "./dispatch.js";
import {
  DeleteEdgeResultSchema,
  EdgeSchema,
  PutEdgeResultSchema,
  TraversalSchema,
  TraverseRequestSchema,
} from "./graph.js";
import {
  COMMAND_ID_PATTERN,
  clusterMemberId,
  commandId,
  key,
  name,
  queueName,
  scopeId,
} from "./identifiers.js";
import type { Wire, WireSchema } from "./json-schema.js";
import { MembershipTableSchema, MemberWriteSchema, PutMemberResultSchema } from "./membership.js";
import { NoBodySchema } from "./no-body.js";
import {
  CreateKeyResultSchema,
  DeleteKeyResultSchema,
  PrincipalWriteSchema,
  PutPrincipalResultSchema,
} from "./principals.js";
import { QueryPageSchema, QueryRequestSchema } from "./query.js";
import {
  AckBodySchema,
  CompleteBodySchema,
  CompleteResultSchema,
  EnqueueBodySchema,
  EnqueueResultSchema,
  LeaseResultSchema,
  NackBodySchema,
  NackResultSchema,
  QueueMessageRefSchema,
  RenewBodySchema,
  RenewResultSchema,
} from "./queues.js";
import { SearchRequestSchema, SearchResultSchema } from "./search.js";
import {
  AckDeliveryResultSchema,
  CompleteDeliveryBodySchema,
  CompleteDeliveryResultSchema,
  DeliveryResultSchema,
  PutSubscriptionBodySchema,
  PutSubscriptionResultSchema,
} from "./subscriptions.js";
import { TransactionResultSchema, WriteSetSchema } from "./write-sets.js";

/**
 * The schemas of every route, by the kind of command, read or membership change it carries: what the
 * voter's edge validates and documents, and what the client sends and reads. The voter's route table
 * (node/src/http/routes.ts) names a kind per route and takes its schemas from here.
 */

/**
 * The body of each route that takes one. The edge checks types, required fields and identifier shapes
 * before a command is submitted, so a malformed request answers 400 instead of committing as a failed
 * outcome; the voter still validates everything when it applies, against limits the edge cannot see.
 * Unknown fields are left alone: tenant, principal or role claims in a body are ignored, not refused.
 */
export const REQUEST_BODY_SCHEMAS = {
  "catalog.put": PutDocumentBodySchema,
  "catalog.delete": DeleteDocumentBodySchema,
  transaction: WriteSetSchema,
  "graph.putEdge": EdgeSchema,
  "graph.deleteEdge": EdgeSchema,
  "queue.enqueue": EnqueueBodySchema,
  "queue.lease": DeliveryRequestSchema,
  "queue.ack": AckBodySchema,
  "queue.nack": NackBodySchema,
  "queue.renew": RenewBodySchema,
  "queue.complete": CompleteBodySchema,
  "subscription.put": PutSubscriptionBodySchema,
  "subscription.deliver": DeliveryRequestSchema,
  "subscription.ack": NoBodySchema,
  "subscription.complete": CompleteDeliveryBodySchema,
  "membership.put": MemberWriteSchema,
  "dispatch.append": DispatchBodySchema,
  "admin.putPrincipal": PrincipalWriteSchema,
  "admin.createKey": NoBodySchema,
  "admin.deleteKey": NoBodySchema,
  "cluster.addLearner": AddLearnerBodySchema,
  "cluster.promote": NoBodySchema,
  "cluster.remove": NoBodySchema,
  "cluster.transferLeader": TransferLeaderBodySchema,
  "catalog.bulkGet": BulkGetBodySchema,
  query: QueryRequestSchema,
  search: SearchRequestSchema,
  "graph.traverse": TraverseRequestSchema,
} as const satisfies Readonly<Record<string, WireSchema>>;

export type RequestBodyKind = keyof typeof REQUEST_BODY_SCHEMAS;
/** What a route of `kind` takes as its body. */
export type RequestBodyOf<K extends RequestBodyKind> = Wire<(typeof REQUEST_BODY_SCHEMAS)[K]>;

/**
 * What each route answers on success. A write answers `{"commandId", ...the state machine's result}`; a
 * read answers what the voter returns for it. The edge does not filter answers through these: they
 * document them (OpenAPI) and type them for the client, and the voter's tests hold its answers to them.
 */
export const RESPONSE_SCHEMAS = {
  "catalog.put": PutResultSchema,
  "catalog.delete": DeleteResultSchema,
  transaction: TransactionResultSchema,
  "graph.putEdge": PutEdgeResultSchema,
  "graph.deleteEdge": DeleteEdgeResultSchema,
  "queue.enqueue": EnqueueResultSchema,
  "queue.lease": LeaseResultSchema,
  "queue.ack": QueueMessageRefSchema,
  "queue.nack": NackResultSchema,
  "queue.renew": RenewResultSchema,
  "queue.complete": CompleteResultSchema,
  "subscription.put": PutSubscriptionResultSchema,
  "subscription.deliver": DeliveryResultSchema,
  "subscription.ack": AckDeliveryResultSchema,
  "subscription.complete": CompleteDeliveryResultSchema,
  "membership.put": PutMemberResultSchema,
  "dispatch.append": DispatchResultSchema,
  "admin.putPrincipal": PutPrincipalResultSchema,
  "admin.createKey": CreateKeyResultSchema,
  "admin.deleteKey": DeleteKeyResultSchema,
  "catalog.get": DocumentSchema,
  "catalog.bulkGet": BulkGetResultSchema,
  query: QueryPageSchema,
  search: SearchResultSchema,
  "graph.traverse": TraversalSchema,
  "command.get": CommandOutcomeSchema,
  "membership.list": MembershipTableSchema,
  "dispatch.read": DispatchReadSchema,
  "admin.admissionStatus": AdmissionStatusSchema,
  "cluster.members": ClusterMembersSchema,
  "cluster.addLearner": ClusterMemberChangeSchema,
  "cluster.promote": ClusterMemberChangeSchema,
  "cluster.remove": ClusterMemberChangeSchema,
  "cluster.transferLeader": ClusterLeaderTransferSchema,
} as const satisfies Readonly<Record<string, WireSchema>>;

export type ResponseKind = keyof typeof RESPONSE_SCHEMAS;
/** What a route of `kind` answers on success. */
export type ResponseOf<K extends ResponseKind> = Wire<(typeof RESPONSE_SCHEMAS)[K]>;

/** Every path parameter of the routes, by its name in the route's path. */
export const PATH_PARAM_SCHEMAS = {
  key: key("A catalog key: 1-512 characters, percent-encoded in the path"),
  queue: queueName("A queue name"),
  messageId: name("A queue message ID"),
  name: name("A subscription name"),
  deliveryId: name("A subscription delivery ID"),
  memberId: name("A membership row ID"),
  channel: name("A dispatch channel"),
  principalId: scopeId("A principal ID"),
  keyId: name("An API key ID"),
  commandId: commandId("A command ID"),
  clusterMemberId: clusterMemberId("A Raft member ID: voter3, or voter3~1f2e3d4c for a later incarnation"),
} as const satisfies Readonly<Record<string, WireSchema>>;

export type PathParamName = keyof typeof PATH_PARAM_SCHEMAS;

/** The `KeyLoad-Command-Id` header every write carries. */
export const COMMAND_ID_HEADER_SCHEMA = Type.String({
  pattern: COMMAND_ID_PATTERN,
  description:
    "The command's ID, scoped per tenant: a retry with the same ID and the same route and body returns the " +
    "original outcome without applying again.",
});
