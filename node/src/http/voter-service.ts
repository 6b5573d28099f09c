import type { Lane } from "@keyload/contract";
import type { Registry } from "prom-client";
import type { CommandStageObserver } from "../admission/index.js";
import type { CommandKind, RouteParams } from "../requests/command-kinds.js";
import type { CommandPayload } from "../requests/command-payload.js";
import type { Role } from "../requests/roles.js";
import type { ClusterKind, ClusterParams } from "./cluster-kinds.js";
import type { ReadKind, ReadParams } from "./read-kinds.js";

/** Who a verified API key belongs to: the only source of tenant, principal and roles for a request. */
export interface Identity {
  /** The key's ID (not secret): the voter checks later that the key is still the principal's. */
  readonly keyId: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly roles: readonly Role[];
}

/** One write, as the HTTP edge hands it over once the request is admitted, authorized and read. */
export interface CommandSubmission {
  readonly kind: CommandKind;
  /** The route's path parameters (COMMAND_KINDS names them), percent-decoded. */
  readonly params: RouteParams;
  /** The request body exactly as received; empty for a request without a body. */
  readonly payload: CommandPayload;
  /** The `KeyLoad-Command-Id` header, already checked against the contract's alphabet. */
  readonly commandId: string;
  readonly identity: Identity;
  readonly lane: Lane;
  /**
   * Aborts when the client goes away before its response is written. The command may still commit:
   * this only tells the voter nobody waits for the answer.
   */
  readonly signal: AbortSignal;
}

/** A committed command's outcome. */
export interface CommandAnswer {
  readonly commandId: string;
  /** The Raft index of the entry that applied the command (the original one for a deduplicated retry). */
  readonly index: number;
  /** The state machine's JSON result; its fields become the response body beside `commandId`. */
  readonly result: unknown;
}

/** One read; the voter answers it linearizably unless the route documents otherwise. */
export interface ReadRequest {
  readonly kind: ReadKind;
  readonly params: ReadParams;
  /** The parsed JSON body of the POST reads (bulk-get, query, search, traverse); undefined otherwise. */
  readonly body: unknown;
  /** The query-string parameters the route declares (dispatch reads: `after`, `limit`), as given. */
  readonly query: Readonly<Record<string, string>>;
  readonly identity: Identity;
  /**
   * The route's roles, one of which the identity held at the edge. The edge's catalog may trail the
   * commit, so the voter checks them, and the key, again after its read barrier.
   */
  readonly roles: readonly Role[];
  /** Aborts when the client goes away before its response is written. */
  readonly signal: AbortSignal;
}

/** One change of the Raft configuration (an admin route); answered once applied. */
export interface ClusterChangeRequest {
  readonly kind: ClusterKind;
  readonly params: ClusterParams;
  /** The parsed JSON body (`{"memberId"}` of an add); undefined for a route without one. */
  readonly body: unknown;
  readonly identity: Identity;
  /** The route's roles, checked again once the voter has caught up, as for a read. */
  readonly roles: readonly Role[];
}

export interface HealthReport {
  /** The process serves requests at all. */
  readonly live: boolean;
  /** A member of a cluster with a known leader, caught up within its bound. */
  readonly ready: boolean;
  /** Shown as is on the health routes: role, term, indexes, why not ready. */
  readonly detail: Readonly<Record<string, unknown>>;
}

export interface LeaderHint {
  readonly leaderId: string | null;
  readonly leaderHttpUrl: string | null;
}

/**
 * What the public HTTP edge needs from the voter, and all of it. The voter wiring implements it; the
 * edge owns HTTP admission, authentication order, body caps and the error body, the voter everything
 * behind them. Every failure is thrown as a KeyLoadError (contract section 6); anything else answers
 * 500 Internal without its message.
 */
export interface VoterService {
  /**
   * Looks the key's hash up in the local principal catalog; null when no key matches. Synchronous
   * because it runs while the request holds an HTTP slot and before its body is read; constant-time
   * comparison is the implementation's concern.
   */
  authenticate(apiKey: string): Identity | null;
  /**
   * Resolves once this voter has applied everything committed when it was called (a read barrier):
   * a key created through another voter is acknowledged there before it is applied here, so a key
   * this voter does not know is looked up again after it, before the request is refused.
   */
  catchUp(): Promise<void>;
  /**
   * Admits, replicates and applies one command. Throws ResourceExhausted (command admission),
   * UnknownWriteOutcome, Unavailable, CommandIdConflict, InvalidArgument, FailedPrecondition, NotFound,
   * LeaseLost, and Unauthenticated or PermissionDenied when the catalog as of the command's entry refuses
   * its key or principal.
   */
  submitCommand(command: CommandSubmission): Promise<CommandAnswer>;
  /**
   * Answers one read route; throws NotFound (404), InvalidArgument, Unavailable... and Unauthenticated
   * or PermissionDenied when a key revoke or role change committed before the read refuses it.
   */
  read(request: ReadRequest): Promise<unknown>;
  /**
   * Proposes one membership change through this voter, which must lead: Unavailable (with the leader
   * hint) otherwise. Throws InvalidArgument, NotFound, FailedPrecondition (`ConfChangePending`,
   * `MemberNameInUse`, `LearnerBehind`), UnknownWriteOutcome; asking again is always safe.
   */
  changeCluster(request: ClusterChangeRequest): Promise<unknown>;
  health(): HealthReport;
  /** Where a client should go instead; sent in `KeyLoad-Leader` on Unavailable and UnknownWriteOutcome. */
  leaderHint(): LeaderHint;
  /** The voter's registry; the edge registers its HTTP metrics here too, and `/metrics` serves it. */
  readonly metricsRegistry: Registry;
  /** Where the edge reports a command's `edge` and `respond` stages; the voter reports the others. */
  readonly commandStages: CommandStageObserver;
}
