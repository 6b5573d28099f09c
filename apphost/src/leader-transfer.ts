import { ConnectionError, KeyLoadClient, KeyLoadClientError } from "@keyload/client";
import { buildAppModel, httpUrlOf, stateDirPaths, type VoterName } from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import {
  LeaderTransferError,
  MissingAdminKeyError,
  NoClusterError,
  VoterStateError,
} from "./apphost-errors.js";
import { readState } from "./apphost-state.js";
import { readKeptCredentials } from "./cluster-credentials.js";
import { processState } from "./process-table.js";
import { probeVoter } from "./voter-health.js";

/**
 * Hands the leadership of the cluster in `stateDir` to `voter` through the voters' admin route
 * (`POST /v1/admin/cluster/leader`), and returns once that voter leads; for `transfer-leader` and
 * the dashboard alike. Throws LeaderTransferError with what the voters answered.
 */
export async function transferLeader(stateDir: string, voter: VoterName): Promise<string> {
  const state = readState(stateDirPaths(stateDir).stateFile);
  if (!state) throw new NoClusterError(`there is no cluster in ${stateDir} (run \`up\` first)`);
  const model = buildAppModel(stateDir, state.voters);
  // A stopped voter cannot take over: say so now rather than after the call's deadline.
  const current = processState(state.voters.find((v) => v.name === voter)?.process ?? null);
  if (current !== "running") {
    const what = current === "paused" ? "paused: resume it" : "not running: start it";
    throw new VoterStateError(`${voter} is ${what} before handing it leadership`);
  }
  const credentials = readKeptCredentials(model);
  if (!credentials) throw new MissingAdminKeyError(model.stateDir);
  // By the member ID the voter holds now: its name may still stand for the member it was before it
  // lost its data, which no process runs any more.
  const target = model.voters.find((v) => v.name === voter)!;
  const health = await probeVoter(httpUrlOf(target), APPHOST_DEFAULTS.probeTimeoutMs);
  if (health.reachable && health.memberId !== null && health.member !== "voter") {
    throw new LeaderTransferError(
      health.member === "learner"
        ? `${voter} is a learner (member ${health.memberId}): only a voter can lead`
        : `${voter} runs as a new member (${health.memberId}) the cluster does not hold yet: it joins by itself once the leader adds it, or \`replace ${voter}\` adds it`,
    );
  }
  const client = new KeyLoadClient({ endpoints: model.voters.map(httpUrlOf), apiKey: credentials.adminKey });
  try {
    const answer = await client.transferLeader(health.memberId ?? voter);
    return answer.changed ? `${voter} leads now (member ${answer.leader})` : `${voter} already leads`;
  } catch (err) {
    if (err instanceof KeyLoadClientError) {
      throw new LeaderTransferError(`${voter} did not take over leadership: ${err.message} [${err.reason}]`);
    }
    if (err instanceof ConnectionError) {
      throw new LeaderTransferError(`${voter} did not take over leadership: ${err.message}`);
    }
    throw err;
  } finally {
    await client.close();
  }
}
