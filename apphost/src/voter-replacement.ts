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
  const leaders = new LeaderMembers(cluster, client);
  try {
    const removed = await removeEvery(client, leaders, name, null, step);

    await cluster.stop(name);
    rmSync(cluster.voter(name).dataDir, { recursive: true, force: true });
    step(`emptied ${name}'s data dir`);
    await cluster.start(name);
    const joiner = (await probeVoter(httpUrlOf(cluster.voter(name)), APPHOST_DEFAULTS.probeTimeoutMs))
      .memberId;
    if (joiner === null) throw new VoterReplaceError(`${name} started but does not say its member ID`);
    step(`${name} started empty as ${joiner}`);

    // The new member also asks the leader to add and promote it (unless told not to), and may have
    // been in the middle of that when this began: each step is taken from what the leader holds now,
    // and whichever of the two asks first makes it.
    await removeEvery(client, leaders, name, joiner, step);
    const catchUpTimeoutMs = options.catchUpTimeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs;
    const deadline = Date.now() + catchUpTimeoutMs;
    for (;;) {
      const role = (await leaders.members()).find((m) => m.memberId === joiner)?.role;
      if (role === "voter") break;
      if (role === undefined) {
        const added = await askUntil(() => client.addLearner(joiner), ["MemberNameInUse"], deadline);
        step(
          added.changed ? `added ${joiner} as a learner` : `${joiner} is a ${added.role} already (it asked)`,
        );
      } else {
        const promoted = await askUntil(() => client.promoteMember(joiner), ["LearnerBehind"], deadline);
        step(promoted.changed ? `promoted ${joiner} to voter` : `${joiner} is a voter already (it asked)`);
      }
    }
    const instead = removed.length === 0 ? "" : ` in place of ${removed.join(", ")}`;
    return `${name} replaced: ${joiner} is a voter${instead}`;
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

/** Removes every member named `name` but `keep`, as the leader holds them; says which it removed. */
async function removeEvery(
  client: KeyLoadClient,
  leaders: LeaderMembers,
  name: VoterName,
  keep: string | null,
  step: (line: string) => void,
): Promise<string[]> {
  const removed: string[] = [];
  const deadline = Date.now() + APPHOST_DEFAULTS.replaceQuorumWaitMs;
  for (;;) {
    const old = (await leaders.members()).find((m) => m.name === name && m.memberId !== keep);
    if (old === undefined) return removed;
    // Not changed: the new member's own join removed it meanwhile.
    if ((await askUntil(() => client.removeMember(old.memberId), [], deadline)).changed) {
      step(`removed ${old.memberId} from the configuration`);
      removed.push(old.memberId);
    }
  }
}

type Members = Awaited<ReturnType<KeyLoadClient["clusterMembers"]>>["members"];

/**
 * The configuration as the leader holds it: a follower's may trail it (the answer's `lastIndex` is
 * null off the leader), and one that missed a change would name a member already gone.
 */
class LeaderMembers {
  constructor(
    private readonly cluster: AppHostCluster,
    private readonly client: KeyLoadClient,
  ) {}

  async members(): Promise<Members> {
    const deadline = Date.now() + APPHOST_DEFAULTS.replaceQuorumWaitMs;
    let endpoint: string | undefined;
    for (;;) {
      const answer = await this.client.clusterMembers(endpoint === undefined ? {} : { endpoint });
      if (answer.lastIndex !== null) return answer.members;
      // A follower names the leader by its voter name, which may hold a new member's ID.
      const voter = VOTER_NAMES.find((v) => v === answer.leader);
      if (Date.now() >= deadline) {
        throw new VoterReplaceError(
          `no voter answered as the leader within ${APPHOST_DEFAULTS.replaceQuorumWaitMs} ms`,
        );
      }
      if (voter === undefined || endpoint !== undefined) await sleep(APPHOST_DEFAULTS.pollIntervalMs);
      endpoint = voter === undefined ? undefined : httpUrlOf(this.cluster.voter(voter));
    }
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

/**
 * Asks `change` until it is not refused for `ConfChangePending` (one change is made at a time) or one of
 * `reasons`, or `deadline` has passed.
 */
async function askUntil<T>(
  change: () => Promise<T>,
  reasons: readonly string[],
  deadline: number,
): Promise<T> {
  for (;;) {
    try {
      return await change();
    } catch (err) {
      const retried =
        err instanceof KeyLoadClientError && [...reasons, "ConfChangePending"].includes(err.reason ?? "");
      if (!retried || Date.now() >= deadline) throw err;
    }
    await sleep(APPHOST_DEFAULTS.pollIntervalMs);
  }
}
