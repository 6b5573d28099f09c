import type {
  ClusterLeaderTransfer,
  ClusterMember,
  ClusterMemberChange,
  ClusterMembers,
  ErrorCode,
  Lane,
  Member,
  MemberStatus,
  Operation,
} from "@keyload/contract";

export type {
  ClusterLeaderTransfer,
  ClusterMember,
  ClusterMemberChange,
  ClusterMembers,
  Member,
  MemberStatus,
  Operation,
};

/**
 * The request and answer shapes of the contract's routes (CONTRACT.md sections 3, 4 and 7). Document
 * values, message bodies and directive data are any JSON; the `T` of a read is the caller's claim about
 * them, not something the client checks.
 */

export type Role = "admin" | "writer" | "reader";

/** Every write answers with the command ID it ran under. */
export interface Written {
  readonly commandId: string;
}

export interface Document<T = unknown> {
  readonly key: string;
  readonly value: T;
  readonly version: number;
}

export interface PutResult extends Written {
  readonly key: string;
  readonly version: number;
}

export interface DeleteResult extends Written {
  readonly key: string;
  /** The tombstone's version. */
  readonly version: number;
}

export interface OutboxMessage {
  readonly queue: string;
  readonly body: unknown;
  readonly delayMs?: number;
}

/** Catalog writes and outbox messages that commit together or not at all. */
export interface WriteSet {
  readonly operations?: readonly Operation[];
  readonly outbox?: readonly OutboxMessage[];
}

export interface WriteSetFields {
  readonly results: readonly {
    readonly op: Operation["op"];
    readonly key: string;
    readonly version: number;
  }[];
  readonly outbox: readonly {
    readonly queue: string;
    readonly messageId: string;
    readonly visibleAtMs: number;
  }[];
}

export interface TransactionResult extends Written, WriteSetFields {}

export interface Edge {
  readonly from: string;
  readonly type: string;
  readonly to: string;
}

export interface PutEdgeResult extends Written, Edge {
  readonly created: boolean;
}

export interface DeleteEdgeResult extends Written, Edge {}

export type BulkGetItem<T = unknown> =
  | { readonly key: string; readonly found: true; readonly value: T; readonly version: number }
  | { readonly key: string; readonly found: false };

export interface BulkGetResult<T = unknown> {
  /** One per key, in request order, until the page's byte bound. */
  readonly items: readonly BulkGetItem<T>[];
  /** The keys not answered yet, when the page reached its byte bound: ask for them next. */
  readonly remaining?: readonly string[];
}

export type FilterOp = "eq" | "ne" | "lt" | "lte" | "gt" | "gte" | "exists";

export interface QueryRequest {
  readonly prefix?: string;
  /** Every filter must hold; `path` is a JSON path (`$`, then `.field`, `."any field"` or `[n]` steps). */
  readonly where?: readonly {
    readonly path: string;
    readonly op?: FilterOp;
    readonly value?: string | number | boolean | null;
  }[];
  readonly limit?: number;
  /** Resume after this key: the previous page's `next`. */
  readonly after?: string;
}

export interface QueryPage<T = unknown> {
  readonly items: readonly Document<T>[];
  /**
   * The `after` of the next page: present when the page is full or stopped at its bound on rows
   * examined or bytes answered, so a page may be short, even empty, and still have one.
   */
  readonly next?: string;
}

export interface SearchRequest {
  /** Words to find, all of them; `word*` matches a prefix. */
  readonly query: string;
  readonly prefix?: string;
  readonly limit?: number;
  /** Resume after this hit: the previous page's `next`. */
  readonly after?: SearchCursor;
}

/** A hit's place in the ranking: BM25 score (lower is better), then key. */
export interface SearchCursor {
  readonly score: number;
  readonly key: string;
}

export interface SearchResult<T = unknown> {
  readonly hits: readonly (Document<T> & { readonly score: number })[];
  /** The `after` of the next page: present when the page is full or stopped at its byte bound. */
  readonly next?: SearchCursor;
}

export interface TraverseRequest {
  readonly start: string;
  readonly direction?: "out" | "in" | "both";
  readonly types?: readonly string[];
  readonly maxDepth?: number;
  readonly limit?: number;
}

export interface Traversal {
  readonly nodes: readonly { readonly id: string; readonly depth: number; readonly via: Edge | null }[];
  /** Stopped at the node limit, the bound on edges followed or the byte bound. */
  readonly truncated: boolean;
}

export interface QueueMessageRef extends Written {
  readonly queue: string;
  readonly messageId: string;
}

export interface EnqueueResult extends QueueMessageRef {
  readonly visibleAtMs: number;
}

export interface DeliveryRequest {
  /** At most this many messages or changes. */
  readonly max?: number;
  /** How long the lease hides what it holds. */
  readonly visibilityTimeoutMs?: number;
}

export interface LeasedMessage<T = unknown> {
  readonly messageId: string;
  readonly body: T;
  /** Leases this message has received, this one included. */
  readonly attempts: number;
  readonly enqueuedAtMs: number;
}

export interface LeaseResult<T = unknown> extends Written {
  readonly queue: string;
  /** Null when no message was visible. */
  readonly leaseToken: string | null;
  readonly leaseExpiresAtMs: number | null;
  readonly messages: readonly LeasedMessage<T>[];
}

export interface NackResult extends QueueMessageRef {
  readonly visibleAtMs: number;
  readonly deadLettered: boolean;
}

export interface RenewResult extends QueueMessageRef {
  readonly leaseExpiresAtMs: number;
}

export interface CompleteResult extends QueueMessageRef, WriteSetFields {}

export interface SubscriptionState {
  readonly name: string;
  readonly prefix: string;
  /** The last change-feed sequence number acknowledged. */
  readonly cursor: number;
}

export interface PutSubscriptionResult extends Written, SubscriptionState {
  readonly created: boolean;
}

export interface Change {
  /** Per tenant, dense, from 1. */
  readonly seq: number;
  readonly kind: "put" | "delete" | "edge.put" | "edge.delete";
  readonly key: string;
  /** The document version the change produced; null for edges. */
  readonly version: number | null;
  /** The document put (null once superseded), the edge, or null for a delete. */
  readonly value: unknown;
  readonly superseded: boolean;
  readonly atMs: number;
}

export interface DeliveryResult extends Written {
  readonly name: string;
  /** Null when nothing matched: no lease is held and the cursor moved past what was scanned. */
  readonly deliveryId: string | null;
  readonly leaseExpiresAtMs: number | null;
  readonly changes: readonly Change[];
  readonly cursor: number;
  /** Changes past the cursor that retention removed before they were read, skipped; null when none. */
  readonly trimmed: { readonly fromSeq: number; readonly throughSeq: number } | null;
}

export interface AckDeliveryResult extends Written, SubscriptionState {}

export interface CompleteDeliveryResult extends Written, SubscriptionState, WriteSetFields {}

/**
 * A membership row write: inserts when `etag` is absent, else updates only if it matches; `tableVersion`,
 * when given, must equal the table's. `{iAmAlive: true}` refreshes the row's I-am-alive time alone.
 */
export type MemberWrite =
  | {
      readonly status: MemberStatus;
      readonly address: string;
      readonly etag?: string;
      readonly tableVersion?: number;
    }
  | { readonly iAmAlive: true };

export interface PutMemberResult extends Written, Member {
  readonly tableVersion: number;
}

export interface MembershipTable {
  readonly tableVersion: number;
  readonly members: readonly Member[];
}

export interface DispatchResult extends Written {
  readonly channel: string;
  readonly sequence: number;
}

export interface Directive {
  readonly sequence: number;
  readonly directive: string;
  /** Null when the directive carried none. */
  readonly data: unknown;
  readonly atMs: number;
}

export interface DispatchRead {
  readonly channel: string;
  readonly directives: readonly Directive[];
}

export interface PrincipalWrite {
  readonly principalId: string;
  readonly tenantId: string;
  readonly roles: readonly Role[];
}

export interface PutPrincipalResult extends Written, PrincipalWrite {
  readonly created: boolean;
}

export interface CreateKeyResult extends Written {
  readonly principalId: string;
  readonly keyId: string;
  /** The plain key: shown this once, stored only as a hash. */
  readonly apiKey: string;
}

export interface DeleteKeyResult extends Written {
  readonly principalId: string;
  readonly keyId: string;
}

/**
 * A command ID's durable outcome: its result, or the deterministic refusal it committed as; past the
 * voters' full outcome window, `expired`: it applied at `index`, but only whether it failed remains.
 */
export type CommandOutcome =
  | {
      readonly commandId: string;
      readonly status: "committed";
      readonly index: number;
      readonly result: unknown;
    }
  | {
      readonly commandId: string;
      readonly status: "failed";
      readonly index: number;
      readonly error: { readonly code: ErrorCode; readonly reason: string; readonly message: string };
    }
  | {
      readonly commandId: string;
      readonly status: "expired";
      readonly index: number;
      readonly failed: boolean;
      /** The code of the refusal it committed as; null when it committed. */
      readonly errorCode: ErrorCode | null;
    };

export interface CommandLimits {
  readonly maxCommands: number;
  readonly maxRetainedBytes: number;
  readonly maxCommandsPerTenant: number;
  readonly maxCommandsPerPrincipal: number;
  readonly controlMaxCommands: number;
  readonly controlMaxRetainedBytes: number;
  readonly controlMaxCommandsPerTenant: number;
  readonly controlMaxCommandsPerPrincipal: number;
  readonly controlMaxPayloadBytes: number;
  readonly maxConsecutiveControl: number;
}

export interface HttpLimits {
  readonly maxRequests: number;
  readonly maxModeledBytes: number;
  readonly maxRequestsPerTenant: number;
  readonly maxRequestsPerPrincipal: number;
  readonly heavyReadBytes: number;
  readonly dataRequestBytes: number;
  readonly maxDataBodyBytes: number;
  readonly controlMaxRequests: number;
  readonly controlMaxModeledBytes: number;
  readonly controlMaxRequestsPerTenant: number;
  readonly controlMaxRequestsPerPrincipal: number;
  readonly maxControlBodyBytes: number;
}

export interface CommandLaneUsage {
  readonly commands: number;
  readonly retainedBytes: number;
  readonly queued: number;
  readonly active: number;
}

export interface HttpPoolUsage {
  readonly requests: number;
  readonly modeledBytes: number;
}

/**
 * The voter's free disk against its floors: below `softFloorBytes` data commands are refused
 * (`DiskFloor`), below `hardFloorBytes` every write. The measured fields are null until measured.
 */
export interface DiskStatus {
  readonly freeBytes: number | null;
  /** What one more snapshot of the state takes (the compaction reserve). */
  readonly reserveBytes: number | null;
  readonly softFloorBytes: number;
  readonly hardFloorBytes: number;
  readonly state: "ok" | "soft" | "hard";
}

/** One SQLite database's native limits, in bytes. */
export interface SqliteLimits {
  readonly cacheBytes: number;
  readonly mmapBytes: number;
  readonly walLimitBytes: number;
}

/** `GET /v1/admin/admission`: one voter's limits and current usage (contract section 7). */
export interface AdmissionStatus {
  readonly nodeId: string;
  readonly commandAdmission: {
    readonly limits: CommandLimits;
    readonly data: CommandLaneUsage;
    readonly control: CommandLaneUsage;
    readonly verifiedScopes: readonly {
      readonly lane: Lane;
      readonly tenantId: string;
      readonly principalId: string;
      readonly tenantCommands: number;
      readonly principalCommands: number;
    }[];
  };
  readonly httpAdmission: {
    readonly limits: HttpLimits;
    readonly data: HttpPoolUsage;
    readonly control: HttpPoolUsage;
    readonly ingress: { readonly data: number; readonly control: number };
    readonly verifiedScopes: readonly {
      readonly pool: Lane;
      readonly tenantId: string;
      readonly principalId: string;
      readonly tenantRequests: number;
      readonly principalRequests: number;
    }[];
  };
  readonly disk: DiskStatus;
  /** The Raft log's, the state's and the search index's databases. */
  readonly storageLimits: {
    readonly log: SqliteLimits;
    readonly state: SqliteLimits;
    readonly search: SqliteLimits;
  };
}

/** `GET /health/live` and `/health/ready`. */
export interface Health {
  readonly live: boolean;
  readonly ready: boolean;
  /** Role, term, indexes, why not ready: shown as the voter reports it. */
  readonly detail: Readonly<Record<string, unknown>>;
}
