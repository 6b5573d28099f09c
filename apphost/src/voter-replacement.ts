import { rmSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { ConnectionError, KeyLoadClient, KeyLoadClientError } from "@keyload/client";
import { httpUrlOf, VOTER_NAMES, type VoterName } from "./app-model.js";
import type { AppHostCluster } from "./apphost-cluster.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { VoterReplaceError } from "./apphost-errors.js";
import { probeVoter } from "./voter-health.js";

export interface ReplaceOptions {
  /** How long the new member may take to catch up before it is promoted. */
  readonly catchUpTimeoutMs?: number;
  /** Told each step as it is done. */
  readonly onStep?: (line: string) => void;
}

/**
 * Replaces a voter by a new, empty incarnation of it, as etcd replaces a member whose disk is lost:
 * remove the old member from the configuration, empty its data dir, start it (it comes up as a new
 * member that is told to bootstrap nothing), add it as a learner, and promote it once its log has
 * caught up with the leader's. At no point does a voter count toward a commit with state it does not
 * hold. Each step is safe to repeat, so after a failure running it again resumes.
 */
export async function replaceVoter(
  cluster: AppHostCluster,
  name: VoterName,
  options: ReplaceOptions = {},
): Promise<string> {
  const step = options.onStep ?? (() => {});
  await waitForOtherVoters(cluster, name);
  const client = new KeyLoadClient({
    endpoints: VOTER_NAMES.map((voter) => httpUrlOf(cluster.voter(voter))),
    apiKey: cluster.adminKey,
  });
  try {
    const { members } = await client.clusterMembers();
    const old = members.find((member) => member.name === name);
    if (old !== undefined) {
      await client.removeMember(old.memberId);
      step(`removed ${old.memberId} from the configuration`);
    }

    await cluster.stop(name);
    rmSync(cluster.voter(name).dataDir, { recursive: true, force: true });
    step(`emptied ${name}'s data dir`);
    await cluster.start(name);
    const joiner = (await probeVoter(httpUrlOf(cluster.voter(name)), APPHOST_DEFAULTS.probeTimeoutMs))
      .memberId;
    if (joiner === null) throw new VoterReplaceError(`${name} started but does not say its member ID`);
    step(`${name} started empty as ${joiner}`);

    await client.addLearner(joiner);
    step(`added ${joiner} as a learner`);
    await promoteOnceCaughtUp(
      client,
      joiner,
      options.catchUpTimeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs,
    );
    step(`promoted ${joiner} to voter`);
    return `${name} replaced: ${joiner} is a voter${old === undefined ? "" : ` in place of ${old.memberId}`}`;
  } catch (err) {
    if (err instanceof KeyLoadClientError || err instanceof ConnectionError) {
      throw new VoterReplaceError(`replacing ${name} failed: ${err.message} (${err.code} ${err.reason})`, {
        cause: err,
      });
    }
    throw err;
  } finally {
    await client.close();
  }
}

/**
 * With the old member removed, the other two voters are the whole quorum until the new one is
 * promoted: both must be ready voters before anything changes.
 */
async function waitForOtherVoters(cluster: AppHostCluster, name: VoterName): Promise<void> {
  const others = VOTER_NAMES.filter((other) => other !== name);
  const deadline = Date.now() + APPHOST_DEFAULTS.replaceQuorumWaitMs;
  for (;;) {
    const healths = await Promise.all(
      others.map((other) => probeVoter(httpUrlOf(cluster.voter(other)), APPHOST_DEFAULTS.probeTimeoutMs)),
    );
    const notReady = others.filter((_, i) => !healths[i]!.ready || healths[i]!.member !== "voter");
    if (notReady.length === 0) return;
    if (Date.now() >= deadline) {
      throw new VoterReplaceError(
        `replacing ${name} needs the other voters ready, and ${notReady.join(" and ")} ${notReady.length > 1 ? "are" : "is"} not: start ${notReady.length > 1 ? "them" : "it"} first`,
      );
    }
    await sleep(APPHOST_DEFAULTS.pollIntervalMs);
  }
}

/** The leader refuses to promote a learner whose log is behind (`LearnerBehind`): asked until it is not. */
async function promoteOnceCaughtUp(
  client: KeyLoadClient,
  memberId: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await client.promoteMember(memberId);
      return;
    } catch (err) {
      const behind = err instanceof KeyLoadClientError && err.reason === "LearnerBehind";
      if (!behind || Date.now() >= deadline) throw err;
    }
    await sleep(APPHOST_DEFAULTS.pollIntervalMs);
  }
}
