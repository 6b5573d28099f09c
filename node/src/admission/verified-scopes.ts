/** Per-tenant and per-principal counts of one lane or pool, keyed by the verified principal catalog. */

export interface TenantScope {
  readonly tenantId: string;
  count: number;
  readonly principals: Map<string, PrincipalScope>;
}

export interface PrincipalScope {
  readonly tenant: TenantScope;
  readonly principalId: string;
  count: number;
}

/** A lane's or pool's per-tenant and per-principal caps, each with whatever names it in a refusal. */
export interface ScopeCaps<L extends { readonly value: number }> {
  readonly tenant: L;
  readonly principal: L;
}

/** Why a scope refused: the tenant or the principal is at its cap, `inUse` counting what it holds. */
export class ScopeRefusal<L> {
  constructor(
    readonly scope: "tenant" | "principal",
    readonly cap: L,
    readonly inUse: number,
  ) {}
}

export interface ScopeEntry {
  readonly tenantId: string;
  readonly principalId: string;
  readonly tenantCount: number;
  readonly principalCount: number;
}

/**
 * Principals are nested under their tenant so that an admission costs two map lookups and no key
 * concatenation, and so that a principal ID is never confused across tenants. An entry exists only
 * while it counts something: the last release deletes it, keeping the maps as small as the live load.
 */
export class VerifiedScopes {
  private readonly tenants = new Map<string, TenantScope>();

  /** Counts one more reservation for the principal, unless that would pass either cap. */
  tryAcquire<L extends { readonly value: number }>(
    tenantId: string,
    principalId: string,
    caps: ScopeCaps<L>,
  ): PrincipalScope | ScopeRefusal<L> {
    let tenant = this.tenants.get(tenantId);
    let principal = tenant?.principals.get(principalId);
    if (tenant !== undefined && tenant.count >= caps.tenant.value)
      return new ScopeRefusal("tenant", caps.tenant, tenant.count);
    if (principal !== undefined && principal.count >= caps.principal.value)
      return new ScopeRefusal("principal", caps.principal, principal.count);
    if (tenant === undefined) {
      tenant = { tenantId, count: 0, principals: new Map() };
      this.tenants.set(tenantId, tenant);
    }
    if (principal === undefined) {
      principal = { tenant, principalId, count: 0 };
      tenant.principals.set(principalId, principal);
    }
    tenant.count++;
    principal.count++;
    return principal;
  }

  release(principal: PrincipalScope): void {
    const tenant = principal.tenant;
    if (--principal.count === 0) tenant.principals.delete(principal.principalId);
    if (--tenant.count === 0) this.tenants.delete(tenant.tenantId);
  }

  /** Every live principal scope, ordered by tenant and principal so snapshots are stable. */
  entries(): ScopeEntry[] {
    const entries: ScopeEntry[] = [];
    for (const tenant of this.tenants.values()) {
      for (const principal of tenant.principals.values()) {
        entries.push({
          tenantId: tenant.tenantId,
          principalId: principal.principalId,
          tenantCount: tenant.count,
          principalCount: principal.count,
        });
      }
    }
    return entries.sort((a, b) => compare(a.tenantId, b.tenantId) || compare(a.principalId, b.principalId));
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
