/**
 * Request and response shapes that the voter and the client both name, declared once. Only the
 * shapes both sides use live here; each side keeps its own others.
 */

/** One operation of a transaction; `version` 0 of a check, or `expectedVersion` 0: the key must not exist. */
export type Operation =
  | { readonly op: "put"; readonly key: string; readonly value: unknown; readonly expectedVersion?: number }
  | { readonly op: "delete"; readonly key: string; readonly expectedVersion?: number }
  | { readonly op: "check"; readonly key: string; readonly version: number };

/** Orleans' silo statuses. */
export const MEMBER_STATUSES = ["created", "joining", "active", "shuttingDown", "stopping", "dead"] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];

/** One row of a tenant's membership table. */
export interface Member {
  readonly memberId: string;
  readonly status: MemberStatus;
  readonly address: string;
  readonly etag: string;
  readonly iAmAliveMs: number;
}
