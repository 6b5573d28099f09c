import type { Lane } from "@keyload/contract";
import { ReservationStateError } from "./admission-errors.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import type { HttpPool, HttpRequestKind } from "./http-pool.js";
import type { PrincipalScope } from "./verified-scopes.js";

/**
 * One public request's hold on its pool, from before authentication until its response has been
 * written. It starts in the pool's synthetic ingress scope and moves to the verified principal's scope
 * on `bind`.
 */
export class HttpReservation {
  private scope: PrincipalScope | undefined;
  private isDisposed = false;

  constructor(
    private readonly owner: HttpPool,
    readonly kind: HttpRequestKind,
    /** The body size accounted for: the declared Content-Length, or the route's cap when unknown. */
    readonly admittedBodyBytes: number,
    readonly modeledBytes: number,
  ) {}

  get pool(): Lane {
    return this.owner.pool;
  }

  get bound(): boolean {
    return this.scope !== undefined;
  }

  get disposed(): boolean {
    return this.isDisposed;
  }

  get tenantId(): string | undefined {
    return this.scope?.tenant.tenantId;
  }

  get principalId(): string | undefined {
    return this.scope?.principalId;
  }

  /**
   * Counts the request against the principal its key was verified as. Over the tenant or principal
   * cap it is refused and the whole reservation released, so the caller only answers the refusal.
   * After disposal (the client went away during authentication) it changes nothing: check
   * `disposed` before doing more work.
   */
  bind(tenantId: string, principalId: string): AdmissionRefusal | undefined {
    if (this.isDisposed) return undefined;
    if (this.scope !== undefined)
      throw new ReservationStateError(`a ${this.pool} request reservation was bound twice`);
    const scope = this.owner.bind(tenantId, principalId);
    if (scope instanceof AdmissionRefusal) {
      this.dispose();
      return scope;
    }
    this.scope = scope;
    return undefined;
  }

  /**
   * Releases the slot, the modeled bytes and the scope count. Idempotent: an aborted request may
   * reach disposal from the abort handler and from the failed response alike.
   */
  dispose(): void {
    if (this.isDisposed) return;
    this.isDisposed = true;
    this.owner.release(this.modeledBytes, this.scope);
  }
}
