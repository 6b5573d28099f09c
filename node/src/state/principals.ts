import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
} from "@keyload/contract";
import type Database from "better-sqlite3";
import { isApiKeyHash } from "./api-key.js";
import { type ApplyContext, deriveToken } from "./apply-context.js";
import { checkScopeId } from "./identifiers.js";
import { invalid, type JsonObject, optionalArray, requireString } from "./json-body.js";

export const ROLES = ["admin", "writer", "reader"] as const;
export type Role = (typeof ROLES)[number];

/** Contract section 3: the bootstrap admin is principal `admin` of tenant `system`. */
export const SYSTEM_TENANT = "system";
export const BOOTSTRAP_PRINCIPAL = "admin";
const BOOTSTRAP_KEY_ID = "bootstrap";

export interface PrincipalWrite {
  readonly principalId: string;
  readonly tenantId: string;
  readonly roles: readonly Role[];
}

/** Who an API key authenticates. */
export interface VerifiedPrincipal {
  readonly keyId: string;
  readonly principalId: string;
  readonly tenantId: string;
  readonly roles: readonly Role[];
}

/** Validates a `POST /v1/admin/principals` body: `{"principalId","tenantId","roles":[...]}`. */
export function parsePrincipalWrite(body: JsonObject): PrincipalWrite {
  const roles = optionalArray(body, "roles");
  if (roles === undefined || roles.length === 0) throw invalid("roles must be a non-empty array");
  for (const role of roles) {
    if (!(ROLES as readonly unknown[]).includes(role)) throw invalid(`a role is one of ${ROLES.join(", ")}`);
  }
  return {
    principalId: checkScopeId("principalId", requireString(body, "principalId")),
    tenantId: checkScopeId("tenantId", requireString(body, "tenantId")),
    // Canonical order, so the same set of roles is stored the same way whatever order it arrived in.
    roles: ROLES.filter((role) => roles.includes(role)),
  };
}

/**
 * How many verified keys the cache holds before it starts over; far more than the principals that
 * send at once, yet a bound on what a flood of distinct valid keys could make it hold.
 */
const MAX_CACHED_KEYS = 4096;

interface PrincipalRow {
  tenant: string;
  roles: string;
}

/**
 * Tenants, principals and API-key hashes. Principal IDs are unique across tenants, since the key routes
 * name a principal without its tenant. Admin commands are authorized again here, against the catalog as
 * of this entry, so a key or role revoked by an earlier entry can no longer act.
 *
 * Verified keys are cached in memory by hash. Every change to the catalog goes through this object and
 * empties the cache before it writes, so a key revoked or a role changed by an applied entry stops
 * counting as soon as that entry is applied, as without the cache (a write rolled back after that
 * just leaves the cache empty). A state machine that installs a snapshot opens a new Principals.
 */
export class Principals {
  private readonly verified = new Map<string, VerifiedPrincipal>();
  private readonly findPrincipal: Database.Statement<[string], PrincipalRow>;
  private readonly upsertPrincipal: Database.Statement<[string, string, string, number]>;
  private readonly insertTenant: Database.Statement<[string, number]>;
  private readonly findKey: Database.Statement<[string], { principal_id: string }>;
  private readonly insertKey: Database.Statement<[string, string, string, number]>;
  private readonly removeKey: Database.Statement<[string]>;
  private readonly byHash: Database.Statement<
    [string],
    { key_id: string; principal_id: string; tenant: string; roles: string }
  >;
  private readonly keyHashTaken: Database.Statement<[string], { n: number }>;
  private readonly systemAdminKeys: Database.Statement<[], { n: number }>;

  constructor(db: Database.Database) {
    this.findPrincipal = db.prepare("SELECT tenant, roles FROM principals WHERE principal_id = ?");
    this.upsertPrincipal = db.prepare(
      `INSERT INTO principals (principal_id, tenant, roles, updated_index) VALUES (?, ?, ?, ?)
       ON CONFLICT (principal_id) DO UPDATE SET roles = excluded.roles, updated_index = excluded.updated_index`,
    );
    this.insertTenant = db.prepare("INSERT OR IGNORE INTO tenants (tenant, created_index) VALUES (?, ?)");
    this.findKey = db.prepare("SELECT principal_id FROM api_keys WHERE key_id = ?");
    this.insertKey = db.prepare(
      "INSERT INTO api_keys (key_id, principal_id, key_hash, created_index) VALUES (?, ?, ?, ?)",
    );
    this.removeKey = db.prepare("DELETE FROM api_keys WHERE key_id = ?");
    this.byHash = db.prepare(
      `SELECT k.key_id, k.principal_id, p.tenant, p.roles FROM api_keys k
       JOIN principals p ON p.principal_id = k.principal_id WHERE k.key_hash = ?`,
    );
    this.keyHashTaken = db.prepare("SELECT count(*) AS n FROM api_keys WHERE key_hash = ?");
    this.systemAdminKeys = db.prepare(
      `SELECT count(*) AS n FROM api_keys k JOIN principals p ON p.principal_id = k.principal_id
       WHERE p.tenant = '${SYSTEM_TENANT}' AND EXISTS (SELECT 1 FROM json_each(p.roles) WHERE value = 'admin')`,
    );
  }

  /** Seeds the bootstrap admin into a new database: the same rows on every voter given the same hash. */
  seedBootstrap(adminKeyHash: string): void {
    if (!isApiKeyHash(adminKeyHash)) {
      throw new InvalidArgumentError("the bootstrap admin key hash must be a lowercase hex SHA-256", {
        reason: "InvalidBootstrapKey",
      });
    }
    this.verified.clear();
    this.insertTenant.run(SYSTEM_TENANT, 0);
    this.upsertPrincipal.run(BOOTSTRAP_PRINCIPAL, SYSTEM_TENANT, JSON.stringify(["admin"]), 0);
    this.insertKey.run(BOOTSTRAP_KEY_ID, BOOTSTRAP_PRINCIPAL, adminKeyHash, 0);
  }

  putPrincipal(ctx: ApplyContext, write: PrincipalWrite): PrincipalWrite & { created: boolean } {
    this.authorize(ctx, write.tenantId);
    const existing = this.findPrincipal.get(write.principalId);
    if (existing !== undefined && existing.tenant !== write.tenantId) {
      throw new FailedPreconditionError(`principal ${write.principalId} belongs to another tenant`, {
        reason: "PrincipalInOtherTenant",
      });
    }
    this.verified.clear();
    this.insertTenant.run(write.tenantId, ctx.index);
    this.upsertPrincipal.run(write.principalId, write.tenantId, JSON.stringify(write.roles), ctx.index);
    this.requireSystemAdmin();
    return { ...write, created: existing === undefined };
  }

  /** Registers a key by its hash; the key ID is derived from the entry, the plain key never seen here. */
  createKey(ctx: ApplyContext, principalId: string, keyHash: string): { principalId: string; keyId: string } {
    const principal = this.findPrincipal.get(principalId);
    this.authorize(ctx, principal?.tenant ?? ctx.tenant);
    if (principal === undefined) throw notFound(principalId);
    if (this.keyHashTaken.get(keyHash)!.n > 0) {
      throw new FailedPreconditionError("an identical API key already exists", { reason: "KeyHashTaken" });
    }
    const keyId = `k${deriveToken(ctx, "api-key").slice(0, 23)}`;
    this.verified.clear();
    this.insertKey.run(keyId, principalId, keyHash, ctx.index);
    return { principalId, keyId };
  }

  deleteKey(ctx: ApplyContext, principalId: string, keyId: string): { principalId: string; keyId: string } {
    const principal = this.findPrincipal.get(principalId);
    this.authorize(ctx, principal?.tenant ?? ctx.tenant);
    if (principal === undefined) throw notFound(principalId);
    if (this.findKey.get(keyId)?.principal_id !== principalId) {
      throw new NotFoundError(`principal ${principalId} has no key ${keyId}`, { reason: "KeyNotFound" });
    }
    this.verified.clear();
    this.removeKey.run(keyId);
    this.requireSystemAdmin();
    return { principalId, keyId };
  }

  /**
   * Who holds the key with this hash. The lookup, cached or not, is keyed by the SHA-256 of the key,
   * never by the key: how long it takes can depend only on the digest, and making a digest that shares
   * any chosen part with a stored one is a preimage search, so its timing tells an attacker nothing
   * about a stored key. Unknown hashes are not cached, so guessing cannot grow the cache.
   */
  authenticate(keyHash: string): VerifiedPrincipal | undefined {
    const cached = this.verified.get(keyHash);
    if (cached !== undefined) return cached;
    const row = this.byHash.get(keyHash);
    if (row === undefined) return undefined;
    const found: VerifiedPrincipal = {
      keyId: row.key_id,
      principalId: row.principal_id,
      tenantId: row.tenant,
      roles: Object.freeze(parseRoles(row.roles)),
    };
    if (this.verified.size >= MAX_CACHED_KEYS) this.verified.clear();
    this.verified.set(keyHash, Object.freeze(found));
    return found;
  }

  /**
   * The caller must hold the admin role; an admin of any tenant but `system` administers its own tenant
   * only. Checked at apply, so it holds whatever happened between the request and its commit.
   */
  private authorize(ctx: ApplyContext, targetTenant: string): void {
    const caller = this.findPrincipal.get(ctx.principal);
    if (caller === undefined || caller.tenant !== ctx.tenant || !parseRoles(caller.roles).includes("admin")) {
      throw new PermissionDeniedError(`principal ${ctx.principal} is not an admin`, { reason: "NotAdmin" });
    }
    if (ctx.tenant !== SYSTEM_TENANT && targetTenant !== ctx.tenant) {
      throw new PermissionDeniedError(`an admin of ${ctx.tenant} administers that tenant only`, {
        reason: "OtherTenant",
      });
    }
  }

  /** Refuses any change that would leave no admin of `system` with a key: the cluster would lock itself out. */
  private requireSystemAdmin(): void {
    if (this.systemAdminKeys.get()!.n === 0) {
      throw new FailedPreconditionError("the last admin key of tenant system cannot be removed", {
        reason: "LastSystemAdmin",
      });
    }
  }
}

function parseRoles(json: string): Role[] {
  return JSON.parse(json) as Role[];
}

function notFound(principalId: string): NotFoundError {
  return new NotFoundError(`no principal ${principalId}`, { reason: "PrincipalNotFound" });
}
