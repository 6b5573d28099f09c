import type { TestCluster, TestVoter, VoterName } from "@keyload/apphost/testing";

/**
 * Makes `name` the leader through the admin route that hands leadership over (what `pnpm apphost
 * transfer-leader` does), then waits until every voter follows it. No election timing decides it.
 *
 * Not by cutting a voter off and killing the leader: a killed leader's kernel still sends what its
 * sockets had queued (an orphaned socket has no owner for the partition's rules to match), so the voter
 * that was cut off can receive the very write meant to keep it from winning.
 */
export async function ensureLeader(cluster: TestCluster, name: VoterName): Promise<TestVoter> {
  const current = await cluster.waitForLeader();
  if (current.name === name) return current;
  await cluster.client(cluster.adminKey).transferLeader(name);
  await cluster.waitForReady();
  const leader = await cluster.waitForLeader();
  if (leader.name !== name) throw new Error(`${name} took over leadership, but ${leader.name} leads now`);
  return leader;
}

/**
 * Makes `name` a follower: a leader is restarted, and its graceful stop hands leadership to another
 * voter. Waits until every voter follows one leader, and returns it.
 */
export async function ensureFollower(cluster: TestCluster, name: VoterName): Promise<TestVoter> {
  const leader = await cluster.waitForLeader();
  if (leader.name !== name) return leader;
  await cluster.restart(name);
  await cluster.waitForReady();
  const next = await cluster.waitForLeader();
  if (next.name === name) throw new Error(`${name} led again after its restart`);
  return next;
}
