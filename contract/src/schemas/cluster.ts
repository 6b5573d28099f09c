import { Type } from "@sinclair/typebox";
import { clusterMemberId } from "./identifiers.js";
import { enumOf, integer, orNull, type Wire } from "./json-schema.js";

/**
 * The Raft configuration (`/v1/admin/cluster/...`): voter processes by their configured `name`, each in
 * one incarnation (`memberId`; a voter that lost its data comes back as a new one).
 */

export const AddLearnerBodySchema = Type.Object({
  memberId: clusterMemberId("The new member: a voter's name, or that name, ~ and its incarnation"),
});
export const TransferLeaderBodySchema = Type.Object({
  memberId: clusterMemberId("The voter to lead: its member ID, or its name"),
});

export const ClusterMemberSchema = Type.Object({
  memberId: Type.String(),
  name: Type.String({ description: "The voter process that holds the member ID" }),
  /** A learner receives the log but neither votes nor counts toward a commit until it is promoted. */
  role: enumOf(["voter", "learner"]),
  /** Answered by the leader only: the last index of its log this member is known to hold. */
  match: Type.Optional(integer(0, Number.MAX_SAFE_INTEGER, "Leader only: how far the member's log matches")),
});
export type ClusterMember = Wire<typeof ClusterMemberSchema>;

/** `GET /v1/admin/cluster/members`. */
export const ClusterMembersSchema = Type.Object({
  leader: orNull(Type.String(), { description: "The voter name of the leader, if known" }),
  lastIndex: orNull(integer(0), { description: "The leader's last log index (null from a follower)" }),
  members: Type.Array(ClusterMemberSchema),
});
export type ClusterMembers = Wire<typeof ClusterMembersSchema>;

/** The answer to a membership change: the member as the configuration now holds it. */
export const ClusterMemberChangeSchema = Type.Object({
  memberId: Type.String(),
  role: enumOf(["voter", "learner", null], "The member's role now; null once removed"),
  changed: Type.Boolean({ description: "False when the configuration already was as asked" }),
});
export type ClusterMemberChange = Wire<typeof ClusterMemberChangeSchema>;

/** The answer to `POST /v1/admin/cluster/leader`, given once the voter asked for leads. */
export const ClusterLeaderTransferSchema = Type.Object({
  leader: Type.String({ description: "The member ID of the leader now" }),
  changed: Type.Boolean({ description: "False when that voter already led" }),
});
export type ClusterLeaderTransfer = Wire<typeof ClusterLeaderTransferSchema>;
