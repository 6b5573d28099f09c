import type { ClusterMembers } from "@keyload/client";
import { poll } from "./apphost-poll.js";
import type { MemberKind } from "./voter-health.js";

/**
 * What each voter process (by name) is in the Raft configuration, as the voter at `httpUrl` has
 * applied it (`GET /v1/admin/cluster/members`, admin key): how `status` names the membership of a
 * voter that cannot answer for itself (stopped, paused, killed), as etcd's `member list` still lists
 * a member that is down. A name the configuration lacks is not a member. Null when the voter does not
 * answer, or answers anything but the list: then no one can say.
 */
export async function configuredMembers(
  httpUrl: string,
  adminKey: string,
  timeoutMs: number,
): Promise<ReadonlyMap<string, MemberKind> | null> {
  try {
    const response = await poll(`${httpUrl}/v1/admin/cluster/members`, timeoutMs, {
      authorization: `Bearer ${adminKey}`,
    });
    const body = (await response.json().catch(() => null)) as ClusterMembers | null;
    if (!response.ok || !Array.isArray(body?.members)) return null;
    return new Map(body.members.map((m) => [m.name, m.role]));
  } catch {
    return null;
  }
}
