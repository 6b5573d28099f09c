import { InternalError } from "@keyload/contract";
import type { FastifyRequest } from "fastify";
import type { HttpReservation } from "../admission/index.js";
import { CommandPayload } from "../requests/command-payload.js";
import type { RouteSpec } from "./routes.js";
import type { Identity } from "./voter-service.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route table row a fastify route was registered from. */
    keyloadRoute?: RouteSpec;
  }
  interface FastifyRequest {
    /** Null until the first hook (or, for a URL fastify cannot route, its framework-error handler) sets it. */
    keyloadEdge: RequestEdge | null;
  }
}

/**
 * What the edge knows about one request, from its first hook to its response: the route, the HTTP slot,
 * the verified identity, the command ID and the body. It releases the slot once the response is over
 * (written, or the connection gone) and no voter call still works for the request: a client that hangs up
 * does not free the slot of a query still running on its behalf.
 */
export class RequestEdge {
  reservation: HttpReservation | undefined = undefined;
  identity: Identity | undefined = undefined;
  commandId: string | undefined = undefined;
  /** The body as received; empty when the request has none. */
  payload = CommandPayload.EMPTY;
  /** performance.now() when the first voter call started and when the last one settled; 0 before. */
  calledAt = 0;
  answeredAt = 0;
  private controller: AbortController | undefined = undefined;
  private calls = 0;
  private ended = false;
  private aborted = false;

  constructor(
    readonly route: RouteSpec | undefined,
    /** performance.now() when the request reached the first hook. */
    readonly startedAt: number,
  ) {}

  /**
   * Aborts when the connection closes before the response is written. Fastify's `request.signal` is not
   * used because it also fires once a request body has been read completely (the request stream closes).
   */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  get verifiedIdentity(): Identity {
    if (this.identity === undefined) throw new InternalError("a route ran before its caller was verified");
    return this.identity;
  }

  get verifiedCommandId(): string {
    if (this.commandId === undefined) throw new InternalError("a write ran without its checked command ID");
    return this.commandId;
  }

  /**
   * Takes `reservation` as the request's slot. One given after a wait may come after the connection
   * closed, when nothing would release it any more: it is released at once.
   */
  hold(reservation: HttpReservation): void {
    this.reservation = reservation;
    this.release();
  }

  /** Whether the response is over: after a wait, a request whose client has gone runs nothing more. */
  get over(): boolean {
    return this.ended;
  }

  /** Runs one voter call for the request (which reads `signal` if it needs it); the slot stays held until it settles. */
  async call<T>(work: () => Promise<T>): Promise<T> {
    this.calls++;
    if (this.calledAt === 0) this.calledAt = performance.now();
    try {
      return await work();
    } finally {
      this.answeredAt = performance.now();
      this.calls--;
      this.release();
    }
  }

  /** The response is over; `aborted` when the connection closed before it was written. Idempotent. */
  end(aborted: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.aborted = aborted;
    if (aborted) this.controller?.abort();
    this.release();
  }

  private release(): void {
    if (this.ended && this.calls === 0) this.reservation?.dispose();
  }
}

export function edgeOf(request: FastifyRequest): RequestEdge {
  const edge = request.keyloadEdge;
  if (edge === null)
    throw new InternalError("a request reached a route without passing the edge's first hook");
  return edge;
}
