import { FailedPreconditionError, NotFoundError, PermissionDeniedError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { checkScopeId } from "../requests/identifiers.js";
import {
  type AuthorizationRefusal,
  COMMAND_ROLES,
  invalidCredentials,
  ROLES,
  type Role,
  roleRefusal,
  SYSTEM_TENANT,
} from "../requests/roles.js";
import type { ApiKeyHasher } from "./api-key-hasher.js";
import { type ApplyContext, deriveToken } from "./apply-context.js";
import { type CommandEnvelope, type EntryKind, isSystemKind } from "./command-envelope.js";
import { invalid, type JsonObject, optionalArray, requireString } from "./json-body.js";

type GeneratedKey = NonNullable<CommandEnvelope["generated"]>;

/** Contract section 3: the bootstrap admin is principal `admin` of tenant `system`. */
export { SYSTEM_TENANT };
export const BOOTSTRAP_PRINCIPAL = "admin";
export const BOOTSTRAP_KEY_ID = "bootstrap";
/**
 * Who a system command (see SYSTEM_COMMAND_KINDS) is sent by: the voters themselves, in tenant `system`,
 * with no key. No request can pass for it, since every entry made from a request names its key.
 */
export const SYSTEM_SUBMITTER = "system";

export interface PrincipalWrite {
  readonly principalId: string;
  readonly tenantId: string;
  readonly roles: readonly Role[];
}

/** Who sent a request: the key that authenticated it and the principal that key belonged to then. */
export interface Caller {
  readonly keyId: string;
  readonly principalId: string;
  readonly tenantId: string;
}

/** Who an API key authenticates. */
export interface VerifiedPrincipal extends Caller {
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
 * How many verified keys each cache holds before both start over; far more than the principals that
 * send at once, yet a bound on what a flood of distinct valid keys could make it hold.
 */
const MAX_CACHED_KEYS = 4096;

interface PrincipalRow {
  tenant: string;
  roles: string;
}

interface KeyRow {
  key_id: string;
  principal_id: string;
  tenant: string;
  roles: string;
}

/**
 * Tenants, principals and API-key hashes. Principal IDs are unique across tenants, since the key routes
 * name a principal without its tenant.
 *
 * A request is authorized at the edge against this voter's catalog, which may trail the commit. So a
 * command is authorized again at apply, against the catalog as of its entry (commandRefusal), and a
 * read after its read barrier (refusal): a key revoked or a role reduced by a committed entry can no
 * longer act, through whichever voter.
 *
 * Verified keys are cached in memory, by hash and by key ID. Every change to the catalog goes through
 * this object and empties the caches before it writes, so a key revoked or a role changed by an applied
 * entry stops counting as soon as that entry is applied, as without the caches (a write rolled back
 * after that just leaves them empty; a whole batch rolled back empties them through forget). A state
 * machine that installs a snapshot opens a new Principals.
 */
export class Principals {
  private readonly byHashCache = new Map<string, VerifiedPrincipal>();
  private readonly byKeyIdCache = new Map<string, VerifiedPrincipal>();
  private readonly findPrincipal: Database.Statement<[string], PrincipalRow>;
  private readonly upsertPrincipal: Database.Statement<[string, string, string, number]>;
  private readonly insertTenant: Database.Statement<[string, number]>;
  private readonly findKey: Database.Statement<[string], { principal_id: string }>;
  private readonly insertKey: Database.Statement<[string, string, string, number]>;
  private readonly removeKey: Database.Statement<[string]>;
  private readonly byHash: Database.Statement<[string], KeyRow>;
  private readonly byKeyId: Database.Statement<[string], KeyRow>;
  private readonly keyHashTaken: Database.Statement<[string], { n: number }>;
  private readonly systemAdminKeys: Database.Statement<[], { n: number }>;

  constructor(
    db: Database.Database,
    private readonly keyHasher: ApiKeyHasher,
  ) {
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
    const keyHolder = `SELECT k.key_id, k.principal_id, p.tenant, p.roles FROM api_keys k
       JOIN principals p ON p.principal_id = k.principal_id`;
    this.byHash = db.prepare(`${keyHolder} WHERE k.key_hash = ?`);
    this.byKeyId = db.prepare(`${keyHolder} WHERE k.key_id = ?`);
    this.keyHashTaken = db.prepare("SELECT count(*) AS n FROM api_keys WHERE key_hash = ?");
    this.systemAdminKeys = db.prepare(
      `SELECT count(*) AS n FROM api_keys k JOIN principals p ON p.principal_id = k.principal_id
       WHERE p.tenant = '${SYSTEM_TENANT}' AND EXISTS (SELECT 1 FROM json_each(p.roles) WHERE value = 'admin')`,
    );
  }

  /** Whether the cluster's bootstrap principal exists: from then on `bootstrapAdmin` changes nothing. */
  hasBootstrapPrincipal(): boolean {
    return this.findPrincipal.get(BOOTSTRAP_PRINCIPAL) !== undefined;
  }

  /**
   * Creates the bootstrap admin, principal `admin` of tenant `system` with role admin and key ID
   * `bootstrap` for `keyHash`, unless the bootstrap principal exists already: the first such command
   * committed wins, and every later one, whatever hash its proposer was configured with, writes nothing.
   * Principals are never removed, so once it exists it stays. A data directory seeded at creation, as
   * earlier versions did, holds it already.
   */
  bootstrapAdmin(
    ctx: ApplyContext,
    generated: GeneratedKey,
  ): { principalId: string; tenantId: string; created: boolean } {
    const keyHash = this.storedHash(generated);
    const result = { principalId: BOOTSTRAP_PRINCIPAL, tenantId: SYSTEM_TENANT };
    if (this.hasBootstrapPrincipal()) return { ...result, created: false };
    // Checked before writing: the table's unique constraints would otherwise fail the apply on every voter.
    if (this.keyHashTaken.get(keyHash)!.n > 0 || this.findKey.get(BOOTSTRAP_KEY_ID) !== undefined) {
      throw new FailedPreconditionError("the bootstrap admin key is taken already", {
        reason: "KeyHashTaken",
      });
    }
    this.forget();
    this.insertTenant.run(SYSTEM_TENANT, ctx.index);
    this.upsertPrincipal.run(BOOTSTRAP_PRINCIPAL, SYSTEM_TENANT, JSON.stringify(["admin"]), ctx.index);
    this.insertKey.run(BOOTSTRAP_KEY_ID, BOOTSTRAP_PRINCIPAL, keyHash, ctx.index);
    return { ...result, created: true };
  }

  putPrincipal(ctx: ApplyContext, write: PrincipalWrite): PrincipalWrite & { created: boolean } {
    this.requireOwnTenant(ctx, write.tenantId);
    const existing = this.findPrincipal.get(write.principalId);
    if (existing !== undefined && existing.tenant !== write.tenantId) {
      throw new FailedPreconditionError(`principal ${write.principalId} belongs to another tenant`, {
        reason: "PrincipalInOtherTenant",
      });
    }
    this.forget();
    this.insertTenant.run(write.tenantId, ctx.index);
    this.upsertPrincipal.run(write.principalId, write.tenantId, JSON.stringify(write.roles), ctx.index);
    this.requireSystemAdmin();
    return { ...write, created: existing === undefined };
  }

  /** Registers a key by its hash; the key ID is derived from the entry, the plain key never seen here. */
  createKey(
    ctx: ApplyContext,
    principalId: string,
    generated: GeneratedKey,
  ): { principalId: string; keyId: string } {
    const keyHash = this.storedHash(generated);
    this.requireManagedPrincipal(ctx, principalId);
    if (this.keyHashTaken.get(keyHash)!.n > 0) {
      throw new FailedPreconditionError("an identical API key already exists", { reason: "KeyHashTaken" });
    }
    const keyId = `k${deriveToken(ctx, "api-key").slice(0, 23)}`;
    this.forget();
    this.insertKey.run(keyId, principalId, keyHash, ctx.index);
    return { principalId, keyId };
  }

  /** The hash to store for a command's key: as carried, or keyed now if the command carried it plain. */
  private storedHash(generated: GeneratedKey): string {
    return generated.unkeyed ? this.keyHasher.rekey(generated.keyHash) : generated.keyHash;
  }

  deleteKey(ctx: ApplyContext, principalId: string, keyId: string): { principalId: string; keyId: string } {
    this.requireManagedPrincipal(ctx, principalId);
    if (this.findKey.get(keyId)?.principal_id !== principalId) {
      throw new NotFoundError(`principal ${principalId} has no key ${keyId}`, { reason: "KeyNotFound" });
    }
    this.forget();
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
    const cached = this.byHashCache.get(keyHash);
    if (cached !== undefined) return cached;
    const found = this.remember(this.byHash.get(keyHash));
    if (found !== undefined) this.byHashCache.set(keyHash, found);
    return found;
  }

  /**
   * Why `caller`, authorized earlier against an older catalog maybe, may no longer do `action` (a command
   * or read kind): its key is gone or another principal's (Unauthenticated), or its principal holds none
   * of `roles` now (PermissionDenied), the refusals the edge would answer. Undefined when it still may.
   */
  refusal(caller: Caller, roles: readonly Role[], action: string): AuthorizationRefusal | undefined {
    const holder = this.holderOf(caller.keyId);
    if (
      holder === undefined ||
      holder.principalId !== caller.principalId ||
      holder.tenantId !== caller.tenantId
    ) {
      return invalidCredentials();
    }
    return roleRefusal(holder, roles, action);
  }

  /**
   * Why the catalog as of this entry refuses a command of `kind`; undefined when it may apply. Decided
   * by the entry and the catalog alone, so every voter decides alike.
   */
  commandRefusal(ctx: ApplyContext, kind: EntryKind): AuthorizationRefusal | undefined {
    if (isSystemKind(kind)) {
      if (ctx.keyId === undefined && ctx.tenant === SYSTEM_TENANT && ctx.principal === SYSTEM_SUBMITTER) {
        return undefined;
      }
      return new PermissionDeniedError(`${kind} is sent by the voters themselves, never by a request`, {
        reason: "SystemCommand",
      });
    }
    const roles = COMMAND_ROLES[kind];
    if (ctx.keyId !== undefined) {
      return this.refusal(
        { keyId: ctx.keyId, principalId: ctx.principal, tenantId: ctx.tenant },
        roles,
        kind,
      );
    }
    // An entry without a key was not made from a request (see CommandEnvelope) and applies as such
    // entries always have: only the catalog stays guarded, by its principal's roles as of this entry.
    if (!kind.startsWith("admin.")) return undefined;
    const principal = this.findPrincipal.get(ctx.principal);
    const held = principal?.tenant === ctx.tenant ? parseRoles(principal.roles) : [];
    return roleRefusal({ roles: held }, roles, kind);
  }

  /** Empties the caches: before every catalog write, and when a batch whose writes may have filled them rolls back. */
  forget(): void {
    this.byHashCache.clear();
    this.byKeyIdCache.clear();
  }

  /** Who holds the key with this ID; key IDs are not secret, so unlike hashes they need no care for timing. */
  private holderOf(keyId: string): VerifiedPrincipal | undefined {
    return this.byKeyIdCache.get(keyId) ?? this.remember(this.byKeyId.get(keyId));
  }

  /** Caches a found key by its ID; unknown IDs are not cached, so naming them cannot grow the cache. */
  private remember(row: KeyRow | undefined): VerifiedPrincipal | undefined {
    if (row === undefined) return undefined;
    const found: VerifiedPrincipal = Object.freeze({
      keyId: row.key_id,
      principalId: row.principal_id,
      tenantId: row.tenant,
      roles: Object.freeze(parseRoles(row.roles)),
    });
    if (this.byHashCache.size >= MAX_CACHED_KEYS || this.byKeyIdCache.size >= MAX_CACHED_KEYS) this.forget();
    this.byKeyIdCache.set(found.keyId, found);
    return found;
  }

  /**
   * An admin of any tenant but `system` administers its own tenant only. The admin role itself was
   * checked before the command ran (commandRefusal), against the catalog as of this entry.
   */
  /**
   * Refuses a principal the command's tenant's admin may not manage: another tenant's is not found, as one no
   * one has: principal IDs are global, and a 403 would tell a tenant's admin which IDs other tenants use.
   */
  private requireManagedPrincipal(ctx: ApplyContext, principalId: string): void {
    const principal = this.findPrincipal.get(principalId);
    if (principal === undefined || (ctx.tenant !== SYSTEM_TENANT && principal.tenant !== ctx.tenant)) {
      throw notFound(principalId);
    }
  }

  private requireOwnTenant(ctx: ApplyContext, targetTenant: string): void {
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
