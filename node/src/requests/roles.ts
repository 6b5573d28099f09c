import { PermissionDeniedError, type Role, UnauthenticatedError } from "@keyload/contract";
import type { CommandKind } from "./command-kinds.js";

export { ROLES, type Role } from "@keyload/contract";

/** Contract section 3: the bootstrap admin's tenant, whose admins administer the cluster itself. */
export const SYSTEM_TENANT = "system";

/** Who may call a route or send a command: any one of the roles listed. */
export const ADMIN_ROLES: readonly Role[] = ["admin"];
export const WRITE_ROLES: readonly Role[] = ["writer", "admin"];
export const READ_ROLES: readonly Role[] = ["reader", "writer", "admin"];

/** The roles each command kind needs: the edge checks them on the route, the state machine at apply. */
export const COMMAND_ROLES: Readonly<Record<CommandKind, readonly Role[]>> = {
  "catalog.put": WRITE_ROLES,
  "catalog.delete": WRITE_ROLES,
  transaction: WRITE_ROLES,
  "graph.putEdge": WRITE_ROLES,
  "graph.deleteEdge": WRITE_ROLES,
  "queue.enqueue": WRITE_ROLES,
  "queue.lease": WRITE_ROLES,
  "queue.ack": WRITE_ROLES,
  "queue.nack": WRITE_ROLES,
  "queue.renew": WRITE_ROLES,
  "queue.complete": WRITE_ROLES,
  "subscription.put": WRITE_ROLES,
  "subscription.deliver": WRITE_ROLES,
  "subscription.ack": WRITE_ROLES,
  "subscription.complete": WRITE_ROLES,
  "membership.put": WRITE_ROLES,
  "dispatch.append": WRITE_ROLES,
  "admin.putPrincipal": ADMIN_ROLES,
  "admin.createKey": ADMIN_ROLES,
  "admin.deleteKey": ADMIN_ROLES,
};

/** What authorizing a request or a command can answer, wherever it is checked. */
export type AuthorizationRefusal = UnauthenticatedError | PermissionDeniedError;

/** The refusal of a key that is unknown, or no longer belongs to the principal it was verified for. */
export function invalidCredentials(): UnauthenticatedError {
  return new UnauthenticatedError("the API key is not valid", { reason: "InvalidCredentials" });
}

/** Refuses `action` (a route, a command or read kind) unless `holder` has one of `roles`. */
export function roleRefusal(
  holder: { readonly roles: readonly Role[] },
  roles: readonly Role[],
  action: string,
): PermissionDeniedError | undefined {
  if (roles.some((role) => holder.roles.includes(role))) return undefined;
  return new PermissionDeniedError(`${action} needs one of the roles ${roles.join(", ")}`, {
    reason: "MissingRole",
  });
}

/**
 * Refuses `action`, which acts on the whole cluster (its Raft configuration, or every tenant's admission
 * usage), to a principal of any tenant but `system`: an admin of another tenant administers that tenant
 * only, as the principal catalog's own commands do (principals.ts).
 */
export function clusterRefusal(
  holder: { readonly tenantId: string },
  action: string,
): PermissionDeniedError | undefined {
  if (holder.tenantId === SYSTEM_TENANT) return undefined;
  return new PermissionDeniedError(
    `${action} acts on the whole cluster: only admins of tenant ${SYSTEM_TENANT} may`,
    {
      reason: "OtherTenant",
    },
  );
}
