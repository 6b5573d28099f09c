import { InvalidArgumentError, type Lane } from "@keyload/contract";
import { type NamedLimit, namedLimit } from "./admission-property.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import type { HttpAdmissionLimits, HttpAdmissionProperty } from "./http-admission-options.js";
import { HttpReservation } from "./http-reservation.js";
import { HttpSlotQueue, type SlotWaiter } from "./http-slot-queue.js";
import { modeledBytes } from "./payload-accounting.js";
import type { RetryAfterAdvice } from "./retry-after-advice.js";
import { type PrincipalScope, type ScopeCaps, ScopeRefusal, VerifiedScopes } from "./verified-scopes.js";

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

/** A request waiting for room in a pool (HttpPool.reserveOrWait). */
export interface SlotWait {
  /** The reservation once room is given, or the refusal once the wait ran out or was cancelled. */
  readonly outcome: Promise<HttpReservation | AdmissionRefusal>;
  /** Stops waiting (the connection closed): `outcome` settles as a refusal, which counts as none. */
  readonly cancel: () => void;
}

/** What one request would reserve, once its declared body passed the cap. */
interface Placement {
  readonly kind: HttpRequestKind;
  readonly admittedBodyBytes: number;
  readonly bytes: number;
}

/** The counters of one HTTP pool; HttpAdmissionGovernor owns one per pool. */
export class HttpPool {
  readonly scopes = new VerifiedScopes();
  private readonly queue = new HttpSlotQueue();
  /** Requests holding a slot but not yet bound to a verified principal. */
  private ingressCount = 0;
  private requests = 0;
  private modeled = 0;
  private readonly maxRequests: PoolLimit;
  private readonly maxModeledBytes: PoolLimit;
  private readonly scopeCaps: ScopeCaps<PoolLimit>;
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
      this.scopeCaps = {
        tenant: limit(limits, "ControlMaxRequestsPerTenant"),
        principal: limit(limits, "ControlMaxRequestsPerPrincipal"),
      };
      this.maxBodyBytes = limit(limits, "MaxControlBodyBytes");
      this.heavyReadBytes = 0;
      this.requestBytes = 0;
    } else {
      this.maxRequests = limit(limits, "MaxRequests");
      this.maxModeledBytes = limit(limits, "MaxModeledBytes");
      this.scopeCaps = {
        tenant: limit(limits, "MaxRequestsPerTenant"),
        principal: limit(limits, "MaxRequestsPerPrincipal"),
      };
      this.maxBodyBytes = limit(limits, "MaxDataBodyBytes");
      this.heavyReadBytes = limits.HeavyReadBytes;
      this.requestBytes = limits.DataRequestBytes;
    }
  }

  get ingress(): number {
    return this.ingressCount;
  }

  /** Requests waiting for room (reserveOrWait). */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Checks in order: declared body, slots, modeled bytes. Nothing is counted on a refusal. A request
   * never takes room others wait for (reserveOrWait). One that needs more than the whole pool is refused
   * for its bytes, whatever else is in use.
   */
  reserve(
    kind: HttpRequestKind,
    declaredLength: number | undefined,
    routeBodyCap: number | undefined,
  ): HttpReservation | AdmissionRefusal {
    const placed = this.place(kind, declaredLength, routeBodyCap);
    if (placed instanceof AdmissionRefusal) return placed;
    return this.admitNow(placed) ?? this.roomRefusal(placed.bytes, true);
  }

  /**
   * As `reserve`, except that a request finding no room, or others already waiting for it, waits up to
   * `waitMs` for room behind them: room that frees goes to the oldest waiter while it fits, so none is
   * overtaken. Past `waitMs` it is refused as `reserve` would refuse it then.
   */
  reserveOrWait(
    kind: HttpRequestKind,
    declaredLength: number | undefined,
    routeBodyCap: number | undefined,
    waitMs: number,
  ): HttpReservation | AdmissionRefusal | SlotWait {
    const placed = this.place(kind, declaredLength, routeBodyCap);
    if (placed instanceof AdmissionRefusal) return placed;
    // It would never fit, whatever is released: waiting at the head of the queue, it would hold up
    // every request behind it for its whole wait.
    if (placed.bytes > this.maxModeledBytes.value) return this.roomRefusal(placed.bytes, true);
    const admitted = this.admitNow(placed);
    if (admitted !== undefined) return admitted;
    return waitMs > 0 ? this.wait(placed, waitMs) : this.roomRefusal(placed.bytes, true);
  }

  /** Moves one request from the ingress scope to the principal's, unless a cap refuses. */
  bind(tenantId: string, principalId: string): PrincipalScope | AdmissionRefusal {
    const scope = this.scopes.tryAcquire(tenantId, principalId, this.scopeCaps);
    if (scope instanceof ScopeRefusal) {
      const reason = scope.scope === "tenant" ? "TenantRequests" : "PrincipalRequests";
      return this.refuse(reason, scope.cap, 1, scope.inUse);
    }
    this.ingressCount--;
    return scope;
  }

  /** Called by a reservation on its one disposal. */
  release(bytes: number, scope: PrincipalScope | undefined): void {
    this.requests--;
    this.modeled -= bytes;
    if (scope === undefined) this.ingressCount--;
    else this.scopes.release(scope);
    this.admitWaiting();
  }

  usage(): HttpPoolUsage {
    return { requests: this.requests, modeledBytes: this.modeled };
  }

  /** The declared body checked against the cap, and what the request would reserve. */
  private place(
    kind: HttpRequestKind,
    declaredLength: number | undefined,
    routeBodyCap: number | undefined,
  ): Placement | AdmissionRefusal {
    const cap =
      routeBodyCap === undefined ? this.maxBodyBytes.value : Math.min(routeBodyCap, this.maxBodyBytes.value);
    if (declaredLength !== undefined) {
      // Past 2^53 a length is no longer exact, but still far over any cap: BodyTooLarge, not malformed.
      if (!Number.isInteger(declaredLength) || declaredLength < 0)
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
    const admittedBodyBytes = declaredLength ?? cap;
    const workingSpace = kind === "heavy" ? this.heavyReadBytes : kind === "data" ? this.requestBytes : 0;
    return { kind, admittedBodyBytes, bytes: modeledBytes(workingSpace, admittedBodyBytes) };
  }

  /** The reservation, when there is room and no one waits for it ahead of this request. */
  private admitNow(placed: Placement): HttpReservation | undefined {
    return this.queue.length === 0 && this.fits(placed.bytes) ? this.admit(placed) : undefined;
  }

  private fits(bytes: number): boolean {
    return this.requests < this.maxRequests.value && this.modeled + bytes <= this.maxModeledBytes.value;
  }

  private admit(placed: Placement): HttpReservation {
    this.requests++;
    this.ingressCount++;
    this.modeled += placed.bytes;
    this.advice.admitted();
    return new HttpReservation(this, placed.kind, placed.admittedBodyBytes, placed.bytes);
  }

  private wait(placed: Placement, waitMs: number): SlotWait {
    let settle!: (outcome: HttpReservation | AdmissionRefusal) => void;
    const outcome = new Promise<HttpReservation | AdmissionRefusal>((resolve) => {
      settle = resolve;
    });
    const waiter: SlotWaiter = {
      bytes: placed.bytes,
      settled: false,
      admit: () => {
        clearTimeout(timer);
        settle(this.admit(placed));
      },
    };
    const stop = (cancelled: boolean): void => {
      if (!this.queue.withdraw(waiter)) return;
      clearTimeout(timer);
      // It may have held back smaller requests behind it.
      this.admitWaiting();
      if (!cancelled && this.fits(placed.bytes)) settle(this.admit(placed));
      else settle(this.roomRefusal(placed.bytes, !cancelled));
    };
    const timer = setTimeout(() => stop(false), waitMs);
    this.queue.add(waiter);
    return { outcome, cancel: () => stop(true) };
  }

  /** Gives freed room to the waiters, oldest first, while the oldest fits. */
  private admitWaiting(): void {
    for (
      let head = this.queue.head();
      head !== undefined && this.fits(head.bytes);
      head = this.queue.head()
    ) {
      this.queue.admitHead();
    }
  }

  /**
   * Why a request of `bytes` finds no room: slots first, then modeled bytes; modeled bytes alone for one
   * larger than the pool, which no free slot would let in.
   */
  private roomRefusal(bytes: number, counted: boolean): AdmissionRefusal {
    return this.requests >= this.maxRequests.value && bytes <= this.maxModeledBytes.value
      ? this.refuse("HttpRequests", this.maxRequests, 1, this.requests, counted)
      : this.refuse("HttpBytes", this.maxModeledBytes, bytes, this.modeled, counted);
  }

  /**
   * A refusal for want of room, advising the pool's Retry-After; `counted` false for a request that
   * stopped waiting because its connection closed, which was never answered.
   */
  private refuse(
    reason: AdmissionRefusal["reason"],
    refusedBy: PoolLimit,
    requested: number,
    inUse: number,
    counted = true,
  ): AdmissionRefusal {
    return new AdmissionRefusal(
      reason,
      "http",
      this.pool,
      refusedBy.property,
      refusedBy.value,
      requested,
      inUse,
      counted ? this.advice.refused() : this.advice.current(),
    );
  }
}
