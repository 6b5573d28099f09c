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

/**
 * One member of the Raft configuration (`GET /v1/admin/cluster/members`): a voter process by its
 * configured `name`, in one incarnation (`memberId`; a voter that lost its data comes back as a new one).
 */
export interface ClusterMember {
  readonly memberId: string;
  readonly name: string;
  /** A learner receives the log but neither votes nor counts toward a commit until it is promoted. */
  readonly role: "voter" | "learner";
  /** Answered by the leader only: the last index of its log this member is known to hold. */
  readonly match?: number;
}

export interface ClusterMembers {
  /** The voter name of the leader the answering voter follows, or null while it knows none. */
  readonly leader: string | null;
  /** The leader's last log index (null from a follower): how far a member's `match` has to go. */
  readonly lastIndex: number | null;
  readonly members: readonly ClusterMember[];
}

/** The answer to a membership change: the member as the configuration now holds it. */
export interface ClusterMemberChange {
  readonly memberId: string;
  /** The member's role after the change; null once it is removed. */
  readonly role: "voter" | "learner" | null;
  /** False when the configuration already was as asked (a repeated request changes nothing). */
  readonly changed: boolean;
}

/** The answer to `POST /v1/admin/cluster/leader`, given once the voter asked for leads. */
export interface ClusterLeaderTransfer {
  /** The member ID of the leader now. */
  readonly leader: string;
  /** False when that voter already led (a repeated request changes nothing). */
  readonly changed: boolean;
}
