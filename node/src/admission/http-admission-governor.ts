import type { Lane } from "@keyload/contract";
import type { AdmissionRefusal } from "./admission-refusal.js";
import {
  type HttpAdmissionLimits,
  type HttpAdmissionLimitsView,
  type HttpAdmissionOptions,
  httpAdmissionLimitsView,
  resolveHttpAdmissionOptions,
} from "./http-admission-options.js";
import { HttpPool, type HttpPoolUsage, type HttpRequestKind, type SlotWait } from "./http-pool.js";
import type { HttpReservation } from "./http-reservation.js";
import {
  RETRY_AFTER_ADVICE_DEFAULTS,
  RetryAfterAdvice,
  type RetryAfterAdviceOptions,
} from "./retry-after-advice.js";

export interface HttpAdmissionRequest {
  /** `heavy` and `data` requests spend the data pool, `control` requests the control pool. */
  readonly kind: HttpRequestKind;
  /** The declared Content-Length; undefined when the length is unknown (chunked). */
  readonly declaredLength?: number | undefined;
  /** The route's body cap; the pool's `MaxDataBodyBytes` or `MaxControlBodyBytes` when absent, never more. */
  readonly bodyCap?: number | undefined;
}

export interface HttpScopeStatus {
  readonly pool: Lane;
  readonly tenantId: string;
  readonly principalId: string;
  readonly tenantRequests: number;
  readonly principalRequests: number;
}

/** `httpAdmission` of the admission status (contract section 7). */
export interface HttpAdmissionStatus {
  readonly limits: HttpAdmissionLimitsView;
  readonly data: HttpPoolUsage;
  readonly control: HttpPoolUsage;
  readonly ingress: { readonly data: number; readonly control: number };
  readonly verifiedScopes: HttpScopeStatus[];
}

/**
 * Bounds a voter's public HTTP requests in flight: slots and modeled bytes per pool, then per tenant
 * and per verified principal once the key is known. Native Raft, peer forwarding and health routes do
 * not come here.
 */
export class HttpAdmissionGovernor {
  readonly limits: HttpAdmissionLimits;
  private readonly data: HttpPool;
  private readonly control: HttpPool;

  /** `now` is a monotonic clock in milliseconds; the pools' Retry-After advice counts by it. */
  constructor(
    options?: HttpAdmissionOptions,
    now: () => number = () => performance.now(),
    advice: RetryAfterAdviceOptions = RETRY_AFTER_ADVICE_DEFAULTS,
  ) {
    this.limits = resolveHttpAdmissionOptions(options);
    this.data = new HttpPool("data", this.limits, new RetryAfterAdvice(advice, now));
    this.control = new HttpPool("control", this.limits, new RetryAfterAdvice(advice, now));
  }

  /**
   * Reserves a slot before credentials are verified, a quorum read runs or JSON is parsed, under the
   * pool's synthetic ingress scope. A declared length over the route's cap is refused here, before any
   * body byte is read. The reservation lasts until the response is written: dispose it then.
   */
  reserve(request: HttpAdmissionRequest): HttpReservation | AdmissionRefusal {
    return this.poolOf(request).reserve(request.kind, request.declaredLength, request.bodyCap);
  }

  /**
   * As `reserve`, but a request that finds its pool full waits up to `waitMs` for a slot, in arrival
   * order, before it is refused: a slot that frees meanwhile goes to the oldest waiter instead of
   * standing empty until some client sends again.
   */
  reserveOrWait(
    request: HttpAdmissionRequest,
    waitMs: number,
  ): HttpReservation | AdmissionRefusal | SlotWait {
    return this.poolOf(request).reserveOrWait(request.kind, request.declaredLength, request.bodyCap, waitMs);
  }

  usage(pool: Lane): HttpPoolUsage {
    return (pool === "control" ? this.control : this.data).usage();
  }

  /** Requests of the pool waiting for a slot. */
  waiting(pool: Lane): number {
    return (pool === "control" ? this.control : this.data).waiting;
  }

  /** Requests of the pool that hold a slot but are not bound to a verified principal yet. */
  ingress(pool: Lane): number {
    return (pool === "control" ? this.control : this.data).ingress;
  }

  private poolOf(request: HttpAdmissionRequest): HttpPool {
    return request.kind === "control" ? this.control : this.data;
  }

  status(): HttpAdmissionStatus {
    const verifiedScopes: HttpScopeStatus[] = [];
    for (const pool of [this.data, this.control]) {
      for (const scope of pool.scopes.entries()) {
        verifiedScopes.push({
          pool: pool.pool,
          tenantId: scope.tenantId,
          principalId: scope.principalId,
          tenantRequests: scope.tenantCount,
          principalRequests: scope.principalCount,
        });
      }
    }
    return {
      limits: httpAdmissionLimitsView(this.limits),
      data: this.data.usage(),
      control: this.control.usage(),
      ingress: { data: this.data.ingress, control: this.control.ingress },
      verifiedScopes,
    };
  }
}
