import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { performance } from "node:perf_hooks";
import {
  InvalidArgumentError,
  NotFoundError,
  type PermissionDeniedError,
  UnavailableError,
} from "@keyload/contract";
import type { FastifyRequest, onRequestHookHandler } from "fastify";
import { AdmissionRefusal, type HttpAdmissionGovernor, HttpReservation } from "../admission/index.js";
import { isCommandId } from "../requests/identifiers.js";
import { clusterRefusal, invalidCredentials, roleRefusal } from "../requests/roles.js";
import { bearerKey } from "./bearer-token.js";
import type { ErrorReplies } from "./error-replies.js";
import { RequestEdge } from "./request-edge.js";
import type { RequestObserver } from "./request-observer.js";
import type { ApiRoute } from "./routes.js";
import type { Identity, VoterService } from "./voter-service.js";

export const COMMAND_ID_HEADER = "KeyLoad-Command-Id";
/** Node lowercases header names. */
const COMMAND_ID_KEY = COMMAND_ID_HEADER.toLowerCase();

export interface EdgeGateDeps {
  readonly service: VoterService;
  readonly governor: HttpAdmissionGovernor;
  readonly replies: ErrorReplies;
  readonly observer: RequestObserver;
  readonly closing: () => boolean;
  /** Whether the request came behind an answer that closes its connection (ClosingConnections). */
  readonly behindClose: (request: IncomingMessage) => boolean;
  /** How long a request its pool has no slot for waits for one before it is refused. */
  readonly slotWaitMs: number;
}

/**
 * The first hook of every request, before any body byte is read. In the contract's order: an HTTP slot
 * under the pool's ingress scope (a declared body over the cap is refused here), the API key, the
 * tenant and principal counts, the role, the command ID. A request its pool is full for waits a while
 * for a slot, behind those already waiting; a refusal is answered without reading the body; health,
 * metrics and the API document pass without a slot, and health without a key.
 */
export function edgeGate(deps: EdgeGateDeps): onRequestHookHandler {
  return function gate(request, reply, done) {
    const route = request.routeOptions.config.keyloadRoute;
    const edge = new RequestEdge(route, performance.now());
    request.keyloadEdge = edge;
    deps.observer.watch(request, reply, edge);
    // Pipelined behind a refusal that closes the connection: no answer of it would be written, so it is
    // neither admitted nor run. The close ends it (the observer counts it aborted).
    if (deps.behindClose(request.raw)) {
      reply.hijack();
      return;
    }
    try {
      checkHost(request);
      checkTransferEncoding(request);
      if (deps.closing()) throw shuttingDown();
      if (route === undefined) {
        const path = request.url.split("?", 1)[0]?.slice(0, 200);
        throw new NotFoundError(`no route matches ${request.method} ${path}`, {
          reason: "RouteNotFound",
        });
      }
      if (route.type === "ops") {
        if (route.keyed) edge.identity = opsIdentity(deps, request);
        done();
        return;
      }
      const waiting = admit(deps, request, edge, route);
      if (waiting !== undefined) {
        // A client that left during the wait released its slot (RequestEdge.end): its request goes no
        // further, holding nothing, and there is no one to answer.
        waiting.then(
          () => {
            if (!edge.over) done();
          },
          (error: unknown) => {
            if (!edge.over) deps.replies.send(request, reply, error, hasBody(request.headers));
          },
        );
        return;
      }
    } catch (error) {
      deps.replies.send(request, reply, error, hasBody(request.headers));
      return;
    }
    done();
  };
}

/**
 * Admits the request: a slot, at once or after a wait for one, then the key, synchronously for a key
 * this voter knows; returns the wait when there is one.
 */
function admit(
  deps: EdgeGateDeps,
  request: FastifyRequest,
  edge: RequestEdge,
  route: ApiRoute,
): Promise<void> | undefined {
  const slot = deps.governor.reserveOrWait(
    {
      kind: route.reservation,
      declaredLength: declaredLength(request.headers),
      bodyCap: deps.governor.limits[route.bodyCap],
    },
    deps.slotWaitMs,
  );
  if (slot instanceof AdmissionRefusal) throw slot.toError();
  if (slot instanceof HttpReservation) return authenticate(deps, request, edge, route, slot);
  // The wait counts toward a refusal's pacing (ErrorReplies): the client hears no 429 sooner.
  const socket = request.raw.socket;
  socket.once("close", slot.cancel);
  return slot.outcome.then((outcome) => {
    socket.off("close", slot.cancel);
    if (outcome instanceof AdmissionRefusal) throw outcome.toError();
    if (deps.closing()) {
      // Held by the edge, the slot is released once this answer is written.
      edge.hold(outcome);
      throw shuttingDown();
    }
    return authenticate(deps, request, edge, route, outcome);
  });
}

/**
 * The caller of a keyed operations route (metrics, the API document): any role, against this voter's
 * catalog only. Holding no slot, it waits for no catching up, so a key created a moment ago may be
 * refused by a voter that has not applied it yet; the next scrape is answered.
 */
function opsIdentity(deps: EdgeGateDeps, request: FastifyRequest): Identity {
  const identity = deps.service.authenticate(bearerKey(request.headers.authorization));
  if (identity === null) throw invalidCredentials();
  return identity;
}

/**
 * Verifies the key of a request holding `admitted`, synchronously for a key this voter knows; for one
 * it does not, returns the wait for this voter to catch up with the commit, after which the key is
 * looked up once more.
 */
function authenticate(
  deps: EdgeGateDeps,
  request: FastifyRequest,
  edge: RequestEdge,
  route: ApiRoute,
  admitted: HttpReservation,
): Promise<void> | undefined {
  edge.hold(admitted);
  const apiKey = bearerKey(request.headers.authorization);
  const identity = deps.service.authenticate(apiKey);
  if (identity !== null) {
    const action = actionOf(route);
    const missingRole = roleRefusal(identity, route.roles, action);
    // A principal never changes tenant: no catching up turns this refusal into an answer, whatever its
    // roles (a missing one is named first, as for any caller).
    const otherTenant = route.clusterWide ? clusterRefusal(identity, action) : undefined;
    if (otherTenant !== undefined) {
      // Named in the request's log line, as any refused caller the edge verified.
      edge.identity = identity;
      throw missingRole ?? otherTenant;
    }
    if (missingRole === undefined) {
      bindIdentity(request, edge, route, admitted, identity);
      return undefined;
    }
  }
  // A key this voter does not know, or one it knows without the route's role, may be known, or have
  // the role, in what has committed: a follower applies behind the commit, and a role granted through
  // the leader would be refused here. Refused only once this voter has caught up. The slot stays
  // reserved meanwhile: each such request costs a read barrier, within the pool's bounds.
  return deps.service.catchUp().then(() => {
    const known = deps.service.authenticate(apiKey);
    if (known === null) throw invalidCredentials();
    bindIdentity(request, edge, route, admitted, known);
  });
}

function bindIdentity(
  request: FastifyRequest,
  edge: RequestEdge,
  route: ApiRoute,
  admitted: HttpReservation,
  identity: Identity,
): void {
  const refusal = admitted.bind(identity.tenantId, identity.principalId);
  if (refusal !== undefined) throw refusal.toError();
  edge.identity = identity;

  // Against this voter's catalog, which may trail the commit: the voter checks again once it has caught
  // up, after a read's barrier or when a command applies.
  const denied = accessRefusal(route, identity);
  if (denied !== undefined) throw denied;
  if (route.type === "command") edge.commandId = commandIdOf(request.headers);
}

/**
 * Why `identity` may not call `route`: a role it lacks, or a route over the whole cluster called from a
 * tenant. A principal never changes tenant, so the voter checks the roles again but not the tenant.
 */
function accessRefusal(route: ApiRoute, identity: Identity): PermissionDeniedError | undefined {
  const action = actionOf(route);
  return (
    roleRefusal(identity, route.roles, action) ??
    (route.clusterWide ? clusterRefusal(identity, action) : undefined)
  );
}

function actionOf(route: ApiRoute): string {
  return `${route.method} ${route.path}`;
}

function shuttingDown(): UnavailableError {
  return new UnavailableError("the voter is shutting down", { reason: "ShuttingDown" });
}

function commandIdOf(headers: IncomingHttpHeaders): string {
  const value = headers[COMMAND_ID_KEY];
  if (value === undefined) {
    throw new InvalidArgumentError("every write needs a KeyLoad-Command-Id header", {
      reason: "MissingCommandId",
    });
  }
  if (typeof value !== "string" || !isCommandId(value)) {
    throw new InvalidArgumentError("KeyLoad-Command-Id must be 1-128 characters of [A-Za-z0-9._:-]", {
      reason: "InvalidCommandId",
    });
  }
  return value;
}

/**
 * The body size admission accounts for: the declared Content-Length, undefined for a chunked body (the
 * governor then takes the route's cap), 0 for a request that declares neither (it has no body).
 */
export function declaredLength(headers: IncomingHttpHeaders): number | undefined {
  if (headers["transfer-encoding"] !== undefined) return undefined;
  const length = headers["content-length"];
  return length === undefined ? 0 : Number(length);
}

/**
 * An HTTP/1.1 request names exactly one Host (RFC 9112, section 3.2); duplicates are joined by the
 * server (http-app.ts), so a comma means two.
 */
function checkHost(request: FastifyRequest): void {
  if (request.raw.httpVersion !== "1.1") return;
  const host = request.headers.host;
  if (host === undefined || host.includes(",")) {
    throw new InvalidArgumentError(
      host === undefined ? "an HTTP/1.1 request must name its Host" : "a request names one Host, not several",
      { reason: "InvalidHost" },
    );
  }
}

/**
 * Only chunked framing is taken, with no coding on top: a body sent `gzip, chunked` would otherwise be
 * read as its coded bytes (RFC 9112 section 6.1 has a server refuse a coding it does not apply).
 */
function checkTransferEncoding(request: FastifyRequest): void {
  const coding = request.headers["transfer-encoding"];
  if (coding === undefined || coding.trim().toLowerCase() === "chunked") return;
  throw new InvalidArgumentError(
    `Transfer-Encoding ${JSON.stringify(coding.slice(0, 80))} is not taken: only chunked, with no other coding`,
    { reason: "UnsupportedTransferEncoding" },
  );
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  const length = headers["content-length"];
  return headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}
