import { InvalidArgumentError, type Lane } from "@keyload/contract";
import { type NamedLimit, namedLimit } from "./admission-property.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import type { HttpAdmissionLimits, HttpAdmissionProperty } from "./http-admission-options.js";
import { HttpReservation } from "./http-reservation.js";
import { modeledBytes } from "./payload-accounting.js";
import type { RetryAfterAdvice } from "./retry-after-advice.js";
import { type PrincipalScope, VerifiedScopes } from "./verified-scopes.js";

/**
 * What a route does with its slot: `heavy` reads (query, search, graph traversal, bulk read) and other
 * `data` requests spend the data pool, `control` requests the control pool.
 */
export type HttpRequestKind = "heavy" | "data" | "control";

type PoolLimit = NamedLimit<HttpAdmissionProperty>;
const limit = namedLimit<HttpAdmissionProperty>;

export interface HttpPoolUsage {
  readonly requests: number;
  readonly modeledBytes: number;
}

/** The counters of one HTTP pool; HttpAdmissionGovernor owns one per pool. */
export class HttpPool {
  readonly scopes = new VerifiedScopes();
  /** Requests holding a slot but not yet bound to a verified principal. */
  private ingressCount = 0;
  private requests = 0;
  private modeled = 0;
  private readonly maxRequests: PoolLimit;
  private readonly maxModeledBytes: PoolLimit;
  private readonly maxPerTenant: PoolLimit;
  private readonly maxPerPrincipal: PoolLimit;
  private readonly maxBodyBytes: PoolLimit;
  private readonly heavyReadBytes: number;
  private readonly requestBytes: number;

  constructor(
    readonly pool: Lane,
    limits: HttpAdmissionLimits,
    /** The Retry-After this pool's refusals for want of room advise. */
    private readonly advice: RetryAfterAdvice,
  ) {
    if (pool === "control") {
      this.maxRequests = limit(limits, "ControlMaxRequests");
      this.maxModeledBytes = limit(limits, "ControlMaxModeledBytes");
      this.maxPerTenant = limit(limits, "ControlMaxRequestsPerTenant");
      this.maxPerPrincipal = limit(limits, "ControlMaxRequestsPerPrincipal");
      this.maxBodyBytes = limit(limits, "MaxControlBodyBytes");
      this.heavyReadBytes = 0;
      this.requestBytes = 0;
    } else {
      this.maxRequests = limit(limits, "MaxRequests");
      this.maxModeledBytes = limit(limits, "MaxModeledBytes");
      this.maxPerTenant = limit(limits, "MaxRequestsPerTenant");
      this.maxPerPrincipal = limit(limits, "MaxRequestsPerPrincipal");
      this.maxBodyBytes = limit(limits, "MaxDataBodyBytes");
      this.heavyReadBytes = limits.HeavyReadBytes;
      this.requestBytes = limits.DataRequestBytes;
    }
  }

  get ingress(): number {
    return this.ingressCount;
  }

  /** Checks in order: declared body, slots, modeled bytes. Nothing is counted on a refusal. */
  reserve(
    kind: HttpRequestKind,
    declaredLength: number | undefined,
    routeBodyCap: number | undefined,
  ): HttpReservation | AdmissionRefusal {
    const cap =
      routeBodyCap === undefined ? this.maxBodyBytes.value : Math.min(routeBodyCap, this.maxBodyBytes.value);
    if (declaredLength !== undefined) {
      if (!Number.isSafeInteger(declaredLength) || declaredLength < 0)
        throw new InvalidArgumentError(`Content-Length ${declaredLength} is not a byte count`, {
          reason: "InvalidContentLength",
        });
      if (declaredLength > cap)
        return new AdmissionRefusal(
          "BodyTooLarge",
          "http",
          this.pool,
          this.maxBodyBytes.property,
          cap,
          declaredLength,
          0,
        );
    }
    if (this.requests >= this.maxRequests.value)
      return this.refuse("HttpRequests", this.maxRequests, 1, this.requests);
    const admittedBodyBytes = declaredLength ?? cap;
    const workingSpace = kind === "heavy" ? this.heavyReadBytes : kind === "data" ? this.requestBytes : 0;
    const bytes = modeledBytes(workingSpace, admittedBodyBytes);
    if (this.modeled + bytes > this.maxModeledBytes.value)
      return this.refuse("HttpBytes", this.maxModeledBytes, bytes, this.modeled);
    this.requests++;
    this.ingressCount++;
    this.modeled += bytes;
    this.advice.admitted();
    return new HttpReservation(this, kind, admittedBodyBytes, bytes);
  }

  /** Moves one request from the ingress scope to the principal's, unless a cap refuses. */
  bind(tenantId: string, principalId: string): PrincipalScope | AdmissionRefusal {
    const scope = this.scopes.tryAcquire(
      tenantId,
      principalId,
      this.maxPerTenant.value,
      this.maxPerPrincipal.value,
    );
    if (scope === "tenant")
      return this.refuse("TenantRequests", this.maxPerTenant, 1, this.scopes.tenantCount(tenantId));
    if (scope === "principal")
      return this.refuse(
        "PrincipalRequests",
        this.maxPerPrincipal,
        1,
        this.scopes.principalCount(tenantId, principalId),
      );
    this.ingressCount--;
    return scope;
  }

  /** Called by a reservation on its one disposal. */
  release(bytes: number, scope: PrincipalScope | undefined): void {
    this.requests--;
    this.modeled -= bytes;
    if (scope === undefined) this.ingressCount--;
    else this.scopes.release(scope);
  }

  usage(): HttpPoolUsage {
    return { requests: this.requests, modeledBytes: this.modeled };
  }

  /** A refusal for want of room: counted, and advising the pool's Retry-After. */
  private refuse(
    reason: AdmissionRefusal["reason"],
    refusedBy: PoolLimit,
    requested: number,
    inUse: number,
  ): AdmissionRefusal {
    return new AdmissionRefusal(
      reason,
      "http",
      this.pool,
      refusedBy.property,
      refusedBy.value,
      requested,
      inUse,
      this.advice.refused(),
    );
  }
}
