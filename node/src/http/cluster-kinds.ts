/**
 * The changes of the Raft configuration the admin routes make (`/v1/admin/cluster/members`), and the
 * hand-over of leadership (`/v1/admin/cluster/leader`): not
 * commands of the state machine but entries of the consensus itself, proposed by the leader one at a
 * time. Like COMMAND_KINDS and READ_KINDS: the edge names the change, the voter makes it.
 */
export const CLUSTER_KINDS = {
  "cluster.addLearner": [], // POST /v1/admin/cluster/members {"memberId"}
  "cluster.promote": ["clusterMemberId"], // POST /v1/admin/cluster/members/{clusterMemberId}/promote
  "cluster.remove": ["clusterMemberId"], // DELETE /v1/admin/cluster/members/{clusterMemberId}
  "cluster.transferLeader": [], // POST /v1/admin/cluster/leader {"memberId"}
} as const satisfies Record<string, readonly ClusterParamName[]>;

export type ClusterKind = keyof typeof CLUSTER_KINDS;

export type ClusterParamName = "clusterMemberId";

export type ClusterParams = Readonly<Partial<Record<ClusterParamName, string>>>;
