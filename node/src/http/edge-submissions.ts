import type { Lane } from "@keyload/contract";
import type { CommandKind, RouteParams } from "../requests/command-kinds.js";
import type { CommandPayload } from "../requests/command-payload.js";
import type { Role } from "../requests/roles.js";
import type { ClusterKind, ClusterParams } from "./cluster-kinds.js";
import type { ReadKind, ReadParams } from "./read-kinds.js";
import type { RequestEdge } from "./request-edge.js";
import type { ClusterChangeRequest, CommandSubmission, Identity, ReadRequest } from "./voter-service.js";

/*
 * What the edge hands the voter, as class instances whose `signal` is a getter on the prototype: the
 * request's AbortController is made only if the voter asks for it. Both shapes that look simpler cost
 * the garbage collector: an object literal with its own getter (Node 20 and 24), and an AbortSignal
 * made for every request (Node 20), each survive the young generation's collections although nothing
 * reaches them, and keep everything they point to alive with them (the request, its body and
 * headers), until a full collection: longer scavenges and more mark-compacts on the write path
 * (docs/decisions/0018-lazy-request-signals.md).
 */

/** The part of a submission that comes from the request's edge: who sent it and the lazy signal. */
abstract class EdgeBound {
  readonly identity: Identity;
  readonly #edge: RequestEdge;

  constructor(edge: RequestEdge) {
    this.#edge = edge;
    this.identity = edge.verifiedIdentity;
  }

  get signal(): AbortSignal {
    return this.#edge.signal;
  }
}

/** One write of a request, as the edge submits it. */
export class EdgeCommandSubmission extends EdgeBound implements CommandSubmission {
  readonly payload: CommandPayload;
  readonly commandId: string;

  constructor(
    edge: RequestEdge,
    readonly kind: CommandKind,
    readonly params: RouteParams,
    readonly lane: Lane,
  ) {
    super(edge);
    this.payload = edge.payload;
    this.commandId = edge.verifiedCommandId;
  }
}

/** One read of a request, as the edge submits it. */
export class EdgeReadRequest extends EdgeBound implements ReadRequest {
  constructor(
    edge: RequestEdge,
    readonly kind: ReadKind,
    readonly params: ReadParams,
    readonly body: unknown,
    readonly query: Readonly<Record<string, string>>,
    readonly roles: readonly Role[],
  ) {
    super(edge);
  }
}

/** One membership change of a request, as the edge submits it. */
export class EdgeClusterChange extends EdgeBound implements ClusterChangeRequest {
  constructor(
    edge: RequestEdge,
    readonly kind: ClusterKind,
    readonly params: ClusterParams,
    readonly body: unknown,
    readonly roles: readonly Role[],
  ) {
    super(edge);
  }
}
