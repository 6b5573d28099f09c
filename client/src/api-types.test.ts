import {
  type AckDeliveryResultSchema,
  type AdmissionStatusSchema,
  type ApiDocumentSchema,
  type BulkGetItemSchema,
  type BulkGetResultSchema,
  type ChangeSchema,
  type ClusterLeaderTransferSchema,
  type ClusterMemberChangeSchema,
  type ClusterMemberSchema,
  type ClusterMembersSchema,
  type CommandLaneUsageSchema,
  type CommandLimitsSchema,
  type CommandOutcomeSchema,
  type CompleteDeliveryResultSchema,
  type CompleteResultSchema,
  type CreateKeyResultSchema,
  type DeepMutable,
  type DeleteEdgeResultSchema,
  type DeleteKeyResultSchema,
  type DeleteResultSchema,
  type DeliveryRequestSchema,
  type DeliveryResultSchema,
  type DirectiveSchema,
  type DiskStatusSchema,
  type DispatchReadSchema,
  type DispatchResultSchema,
  type DocumentSchema,
  type EdgeSchema,
  type EnqueueResultSchema,
  type HealthSchema,
  type HttpLimitsSchema,
  type HttpPoolUsageSchema,
  type LeasedMessageSchema,
  type LeaseResultSchema,
  type MemberSchema,
  type MembershipTableSchema,
  type MemberWriteSchema,
  type MetricsSchema,
  type NackResultSchema,
  type OperationSchema,
  type OutboxMessageSchema,
  type PrincipalWriteSchema,
  type PutEdgeResultSchema,
  type PutMemberResultSchema,
  type PutPrincipalResultSchema,
  type PutResultSchema,
  type PutSubscriptionResultSchema,
  type QueryPageSchema,
  type QueryRequestSchema,
  type QueueMessageRefSchema,
  REQUEST_BODY_SCHEMAS,
  RESPONSE_SCHEMAS,
  type RenewResultSchema,
  type RequestBodyOf,
  type ResponseKind,
  type ResponseOf,
  type SearchCursorSchema,
  type SearchRequestSchema,
  type SearchResultSchema,
  type SqliteLimitsSchema,
  type Static,
  type SubscriptionStateSchema,
  type TransactionResultSchema,
  type TraversalSchema,
  type TraverseRequestSchema,
  type WireSchema,
  type WriteSetFieldsSchema,
  type WriteSetSchema,
  type WrittenSchema,
} from "@keyload/contract";
import { describe, expect, it } from "vitest";
import type * as Api from "./api-types.js";
import { KeyLoadClient } from "./keyload-client.js";

/**
 * The client's wire types against the contract's schemas, which the voter validates and documents its
 * routes with (node/src/http/contract-schemas.test.ts holds the voter to them). The type checks fail
 * `tsc -b` when a type or a method drifts from its schema; the runtime checks, when a method is added
 * without saying which route it calls.
 */

/** Exactly the same type, not merely assignable either way. */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Expect<T extends true> = T;

/** The public type is the schema's type, as TypeBox derives it. */
type Derived<Type, Schema extends WireSchema> = Equal<DeepMutable<Type>, Static<Schema>>;
/** Every entry true; a false one is named in the error. */
type AllTrue<T extends { readonly [K in keyof T]: true }> = T;

export type NamedTypes = AllTrue<{
  Written: Derived<Api.Written, typeof WrittenSchema>;
  Document: Derived<Api.Document, typeof DocumentSchema>;
  PutResult: Derived<Api.PutResult, typeof PutResultSchema>;
  DeleteResult: Derived<Api.DeleteResult, typeof DeleteResultSchema>;
  Operation: Derived<Api.Operation, typeof OperationSchema>;
  OutboxMessage: Derived<Api.OutboxMessage, typeof OutboxMessageSchema>;
  WriteSet: Derived<Api.WriteSet, typeof WriteSetSchema>;
  WriteSetFields: Derived<Api.WriteSetFields, typeof WriteSetFieldsSchema>;
  TransactionResult: Derived<Api.TransactionResult, typeof TransactionResultSchema>;
  Edge: Derived<Api.Edge, typeof EdgeSchema>;
  PutEdgeResult: Derived<Api.PutEdgeResult, typeof PutEdgeResultSchema>;
  DeleteEdgeResult: Derived<Api.DeleteEdgeResult, typeof DeleteEdgeResultSchema>;
  BulkGetItem: Derived<Api.BulkGetItem, typeof BulkGetItemSchema>;
  BulkGetResult: Derived<Api.BulkGetResult, typeof BulkGetResultSchema>;
  QueryRequest: Derived<Api.QueryRequest, typeof QueryRequestSchema>;
  QueryPage: Derived<Api.QueryPage, typeof QueryPageSchema>;
  SearchRequest: Derived<Api.SearchRequest, typeof SearchRequestSchema>;
  SearchCursor: Derived<Api.SearchCursor, typeof SearchCursorSchema>;
  SearchResult: Derived<Api.SearchResult, typeof SearchResultSchema>;
  TraverseRequest: Derived<Api.TraverseRequest, typeof TraverseRequestSchema>;
  Traversal: Derived<Api.Traversal, typeof TraversalSchema>;
  QueueMessageRef: Derived<Api.QueueMessageRef, typeof QueueMessageRefSchema>;
  EnqueueResult: Derived<Api.EnqueueResult, typeof EnqueueResultSchema>;
  DeliveryRequest: Derived<Api.DeliveryRequest | null, typeof DeliveryRequestSchema>;
  LeasedMessage: Derived<Api.LeasedMessage, typeof LeasedMessageSchema>;
  LeaseResult: Derived<Api.LeaseResult, typeof LeaseResultSchema>;
  NackResult: Derived<Api.NackResult, typeof NackResultSchema>;
  RenewResult: Derived<Api.RenewResult, typeof RenewResultSchema>;
  CompleteResult: Derived<Api.CompleteResult, typeof CompleteResultSchema>;
  SubscriptionState: Derived<Api.SubscriptionState, typeof SubscriptionStateSchema>;
  PutSubscriptionResult: Derived<Api.PutSubscriptionResult, typeof PutSubscriptionResultSchema>;
  Change: Derived<Api.Change, typeof ChangeSchema>;
  DeliveryResult: Derived<Api.DeliveryResult, typeof DeliveryResultSchema>;
  AckDeliveryResult: Derived<Api.AckDeliveryResult, typeof AckDeliveryResultSchema>;
  CompleteDeliveryResult: Derived<Api.CompleteDeliveryResult, typeof CompleteDeliveryResultSchema>;
  MemberWrite: Derived<Api.MemberWrite, typeof MemberWriteSchema>;
  Member: Derived<Api.Member, typeof MemberSchema>;
  PutMemberResult: Derived<Api.PutMemberResult, typeof PutMemberResultSchema>;
  MembershipTable: Derived<Api.MembershipTable, typeof MembershipTableSchema>;
  DispatchResult: Derived<Api.DispatchResult, typeof DispatchResultSchema>;
  Directive: Derived<Api.Directive, typeof DirectiveSchema>;
  DispatchRead: Derived<Api.DispatchRead, typeof DispatchReadSchema>;
  PrincipalWrite: Derived<Api.PrincipalWrite, typeof PrincipalWriteSchema>;
  PutPrincipalResult: Derived<Api.PutPrincipalResult, typeof PutPrincipalResultSchema>;
  CreateKeyResult: Derived<Api.CreateKeyResult, typeof CreateKeyResultSchema>;
  DeleteKeyResult: Derived<Api.DeleteKeyResult, typeof DeleteKeyResultSchema>;
  CommandOutcome: Derived<Api.CommandOutcome, typeof CommandOutcomeSchema>;
  CommandLimits: Derived<Api.CommandLimits, typeof CommandLimitsSchema>;
  HttpLimits: Derived<Api.HttpLimits, typeof HttpLimitsSchema>;
  CommandLaneUsage: Derived<Api.CommandLaneUsage, typeof CommandLaneUsageSchema>;
  HttpPoolUsage: Derived<Api.HttpPoolUsage, typeof HttpPoolUsageSchema>;
  DiskStatus: Derived<Api.DiskStatus, typeof DiskStatusSchema>;
  SqliteLimits: Derived<Api.SqliteLimits, typeof SqliteLimitsSchema>;
  AdmissionStatus: Derived<Api.AdmissionStatus, typeof AdmissionStatusSchema>;
  Health: Derived<Api.Health, typeof HealthSchema>;
  ClusterMember: Derived<Api.ClusterMember, typeof ClusterMemberSchema>;
  ClusterMembers: Derived<Api.ClusterMembers, typeof ClusterMembersSchema>;
  ClusterMemberChange: Derived<Api.ClusterMemberChange, typeof ClusterMemberChangeSchema>;
  ClusterLeaderTransfer: Derived<Api.ClusterLeaderTransfer, typeof ClusterLeaderTransferSchema>;
}>;

/** The route kind each method calls: the contract's schemas of that kind type its request and answer. */
const METHOD_KINDS = {
  get: "catalog.get",
  put: "catalog.put",
  delete: "catalog.delete",
  bulkGet: "catalog.bulkGet",
  query: "query",
  search: "search",
  transaction: "transaction",
  putEdge: "graph.putEdge",
  deleteEdge: "graph.deleteEdge",
  traverse: "graph.traverse",
  enqueue: "queue.enqueue",
  lease: "queue.lease",
  ack: "queue.ack",
  nack: "queue.nack",
  renew: "queue.renew",
  complete: "queue.complete",
  putSubscription: "subscription.put",
  deliver: "subscription.deliver",
  ackDelivery: "subscription.ack",
  completeDelivery: "subscription.complete",
  putMember: "membership.put",
  membership: "membership.list",
  dispatch: "dispatch.append",
  readDispatch: "dispatch.read",
  putPrincipal: "admin.putPrincipal",
  createKey: "admin.createKey",
  deleteKey: "admin.deleteKey",
  admissionStatus: "admin.admissionStatus",
  clusterMembers: "cluster.members",
  addLearner: "cluster.addLearner",
  promoteMember: "cluster.promote",
  removeMember: "cluster.remove",
  transferLeader: "cluster.transferLeader",
  getCommand: "command.get",
} as const satisfies Partial<Record<keyof KeyLoadClient, ResponseKind>>;

type MethodKinds = typeof METHOD_KINDS;
/** What a method resolves to; a generic one's `T` taken as `unknown`, the contract's any JSON. */
type Answer<M extends keyof KeyLoadClient> = KeyLoadClient[M] extends (...args: never[]) => Promise<infer R>
  ? R
  : never;

export type MethodAnswers = AllTrue<{
  [M in keyof MethodKinds]: Equal<Answer<M>, ResponseOf<MethodKinds[M]>>;
}>;

/** The routes of operations, outside the kinds: health, metrics, the API document. */
export type OperationAnswers = [
  Expect<Equal<DeepMutable<Answer<"live">>, Static<typeof HealthSchema>>>,
  Expect<Equal<DeepMutable<Answer<"ready">>, Static<typeof HealthSchema>>>,
  Expect<Equal<Answer<"metrics">, Static<typeof MetricsSchema>>>,
  Expect<Equal<DeepMutable<Answer<"openApi">>, Static<typeof ApiDocumentSchema>>>,
];

/** What a method takes as the request the route's body carries, whole. */
type Arg<M extends keyof KeyLoadClient, N extends number> = KeyLoadClient[M] extends (
  ...args: infer A
) => unknown
  ? Exclude<A[N], undefined>
  : never;

export type MethodRequests = [
  Expect<Equal<Arg<"query", 0>, RequestBodyOf<"query">>>,
  Expect<Equal<Arg<"search", 0>, RequestBodyOf<"search">>>,
  Expect<Equal<Arg<"traverse", 0>, RequestBodyOf<"graph.traverse">>>,
  Expect<Equal<Arg<"transaction", 0>, RequestBodyOf<"transaction">>>,
  Expect<Equal<Arg<"putEdge", 0>, RequestBodyOf<"graph.putEdge">>>,
  Expect<Equal<Arg<"deleteEdge", 0>, RequestBodyOf<"graph.deleteEdge">>>,
  Expect<Equal<Arg<"lease", 1>, Exclude<RequestBodyOf<"queue.lease">, null>>>,
  Expect<Equal<Arg<"deliver", 1>, Exclude<RequestBodyOf<"subscription.deliver">, null>>>,
  Expect<Equal<Arg<"completeDelivery", 2>, RequestBodyOf<"subscription.complete">>>,
  Expect<Equal<Arg<"putMember", 1>, RequestBodyOf<"membership.put">>>,
  Expect<Equal<Arg<"putPrincipal", 0>, RequestBodyOf<"admin.putPrincipal">>>,
];

/** Methods that call no route of their own, or only the operations routes. */
const NOT_A_ROUTE = [
  "constructor",
  "preferredEndpoint",
  "newCommandId",
  // Pages through bulkGet and query.
  "bulkGetAll",
  "queryAll",
  // Resubmits whatever write it is given.
  "resolveOutcome",
  // Any write route, the body streamed; any route at all, the answer raw.
  "upload",
  "raw",
  "close",
  "live",
  "ready",
  "metrics",
  "openApi",
];
/** The client's private helpers: they take the kind from the methods above. */
const HELPERS = ["call", "write", "change", "readPost", "read"];

const GET_READS: readonly string[] = [
  "catalog.get",
  "command.get",
  "membership.list",
  "dispatch.read",
  "admin.admissionStatus",
  "cluster.members",
];

describe("the client's wire types", () => {
  it("name a route kind for every method that calls a route", () => {
    const methods = Object.getOwnPropertyNames(KeyLoadClient.prototype).filter(
      (name) => !NOT_A_ROUTE.includes(name) && !HELPERS.includes(name),
    );
    expect(methods.sort()).toEqual(Object.keys(METHOD_KINDS).sort());
  });

  it("name kinds the contract has schemas for", () => {
    for (const [method, kind] of Object.entries(METHOD_KINDS)) {
      expect(RESPONSE_SCHEMAS[kind], method).toBeDefined();
      // A GET read takes no body; every other route has the contract's body schema.
      if (!GET_READS.includes(kind)) expect(Object.keys(REQUEST_BODY_SCHEMAS), method).toContain(kind);
    }
  });
});
