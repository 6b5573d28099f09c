import { type TestCluster, type TestVoter, VOTER_NAMES, type VoterName } from "@keyload/apphost/testing";

/**
 * Makes `name` the leader, for a test whose forwarded settings single out one voter. When another voter
 * leads, the third voter is cut off while a write commits on the leader and `name` alone; the leader is
 * then killed and the cut healed. The third voter lacks that write, so `name` is the only voter that can
 * win the election that follows: no timing decides it. The killed voter is started again and the
 * cluster waits until every voter follows `name`. Needs what `partition` needs (root and iptables).
 */
export async function ensureLeader(cluster: TestCluster, name: VoterName): Promise<TestVoter> {
  const elected: VoterName[] = [];
  for (let attempt = 1; attempt <= 5; attempt++) {
    const leader = await cluster.waitForLeader();
    if (leader.name === name) return leader;
    const third = VOTER_NAMES.find((v) => v !== name && v !== leader.name)!;
    await cluster.partition([[leader.name, name], [third]]);
    await cluster
      .client(cluster.adminKey, { adaptiveThrottle: false })
      .put(`voter-roles/${name}/${attempt}`, { leader: name }, { endpoint: leader.httpUrl });
    await cluster.kill(leader.name);
    await cluster.heal();
    elected.push((await cluster.waitForLeader({ excluding: [leader.name] })).name);
    await cluster.start(leader.name);
    await cluster.waitForReady();
  }
  // The third voter can win only with the write it should lack; a cut that let it through is retried.
  const leader = await cluster.waitForLeader();
  if (leader.name !== name) throw new Error(`${name} never led; the elections chose ${elected.join(", ")}`);
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
