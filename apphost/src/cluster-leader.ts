import { buildAppModel, httpUrlOf, stateDirPaths, VOTER_NAMES, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { NoClusterError, NoLeaderError } from "./apphost-errors.js";
import { readState } from "./apphost-state.js";
import { processState } from "./process-table.js";
import { probeVoter, UNREACHABLE, type VoterHealth } from "./voter-health.js";

/** A voter name on the command line, or `leader` for whichever voter leads when the command runs. */
export type VoterTarget = VoterName | "leader";

export interface ProbedVoter {
  readonly name: string;
  readonly health: VoterHealth;
}

/**
 * The voter a majority of the cluster follows as leader, with the highest term if two claim leadership
 * (an isolated old leader keeps claiming until it notices); undefined when there is none.
 */
export function majorityLeader(
  voters: readonly ProbedVoter[],
  excluding: readonly string[] = [],
): string | undefined {
  const claims = voters
    .filter((v) => v.health.role === "leader" && !excluding.includes(v.name))
    .sort((a, b) => (b.health.term ?? 0) - (a.health.term ?? 0));
  const quorum = Math.floor(VOTER_NAMES.length / 2) + 1;
  for (const claim of claims) {
    const followers = voters.filter(
      (v) => v.health.leader === claim.name && v.health.term === claim.health.term,
    );
    if (followers.length >= quorum) return claim.name;
  }
  return undefined;
}

/** The cluster's leader now, asked of its running voters; NoLeaderError when none leads. */
export async function currentLeader(stateDir: string): Promise<VoterName> {
  const state = readState(stateDirPaths(stateDir).stateFile);
  if (!state) throw new NoClusterError(`there is no cluster in ${stateDir} (run \`up\` first)`);
  const model = buildAppModel(stateDir, state.voters);
  const voters = await Promise.all(
    model.voters.map(async (voter, i) => ({
      name: voter.name,
      // A paused voter cannot answer; asking would only wait for the timeout.
      health:
        processState(state.voters[i]?.process ?? null) === "running"
          ? await probeVoter(httpUrlOf(voter), APPHOST_DEFAULTS.probeTimeoutMs)
          : UNREACHABLE,
    })),
  );
  const leader = majorityLeader(voters);
  if (leader === undefined) {
    const seen = voters.map((v) => `${v.name} ${v.health.reachable ? v.health.role : "unreachable"}`);
    throw new NoLeaderError(`no voter of ${model.stateDir} leads now (${seen.join(", ")})`);
  }
  return leader as VoterName;
}

/** The voter `target` names: itself, or the current leader for `leader`. */
export function resolveVoter(stateDir: string, target: VoterTarget): Promise<VoterName> {
  return target === "leader" ? currentLeader(stateDir) : Promise.resolve(target);
}
