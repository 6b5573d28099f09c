import { createHash } from "node:crypto";
import { type AppModel, buildAppModel, stateDirPaths, VOTER_NAMES, type VoterName } from "./app-model.js";
import { NoClusterError, PartitionUnavailableError, UsageError } from "./apphost-errors.js";
import { readState } from "./apphost-state.js";
import { checkCutsApart } from "./cli-targets.js";
import { resolveVoter, type VoterTarget } from "./cluster-leader.js";
import { processState } from "./process-table.js";
import { linksBetween, NetworkPartition, partitionUnavailableReason } from "./testing/network-partition.js";
import { effectiveGidOf, VOTER_GIDS } from "./voter-groups.js";

/**
 * `partition` and `heal` on a cluster of the command line. Its rules live in a chain named after the
 * state dir, so `heal`, `down` or a later `partition`, each a process of its own, find and remove them.
 */
function partitionOf(stateDir: string): NetworkPartition {
  const digest = createHash("sha256").update(stateDir).digest("hex").slice(0, 16);
  return new NetworkPartition(`KLAS-${digest}`);
}

function loadModel(stateDir: string): { model: AppModel; state: NonNullable<ReturnType<typeof readState>> } {
  const state = readState(stateDirPaths(stateDir).stateFile);
  if (!state) throw new NoClusterError(`there is no cluster in ${stateDir} (run \`up\` first)`);
  return { model: buildAppModel(stateDir, state.voters), state };
}

async function assertAvailable(): Promise<void> {
  const reason = await partitionUnavailableReason();
  if (reason) throw new PartitionUnavailableError(reason);
}

/**
 * Cuts the peer traffic between `groups` both ways, e.g. `[["voter1", "voter2"], ["voter3"]]`; a voter
 * named in no group is cut off alone. Replaces any partition the cluster had.
 */
export async function partitionCluster(
  stateDir: string,
  groups: readonly (readonly VoterTarget[])[],
): Promise<string> {
  await assertAvailable();
  const { model, state } = loadModel(stateDir);
  // The rules tell voters apart by group: a voter started without its own matches none of them.
  for (const record of state.voters) {
    const pid = processState(record.process) === "stopped" ? undefined : record.process?.pid;
    const gid = pid === undefined ? undefined : effectiveGidOf(pid);
    if (pid !== undefined && gid !== VOTER_GIDS[record.name]) {
      throw new PartitionUnavailableError(
        `${record.name} runs under group ${gid ?? "unknown"}, not its own (${VOTER_GIDS[record.name]}): ` +
          "restart the cluster as root (`down`, then `up`) so each voter runs under its own group",
      );
    }
  }
  const resolved: VoterName[][] = [];
  for (const group of groups) resolved.push(await Promise.all(group.map((t) => resolveVoter(stateDir, t))));
  const named = resolved.flat();
  const twice = named.find((name, i) => named.indexOf(name) !== i);
  if (twice !== undefined) throw new UsageError(`${twice} is named in more than one group (as leader)`);
  checkCutsApart(resolved);
  await partitionOf(model.stateDir).apply(
    linksBetween(resolved),
    model.voters.map((v) => ({ name: v.name, peerPort: v.peerPort, gid: VOTER_GIDS[v.name] })),
  );
  const alone = VOTER_NAMES.filter((name) => !resolved.some((g) => g.includes(name))).map((n) => [n]);
  return `partitioned: ${[...resolved, ...alone].map((g) => g.join(",")).join(" | ")}`;
}

/**
 * Removes the cluster's partition, if it has one: also with no cluster running there, or no state
 * left, as rules outlive an AppHost killed, or a state dir deleted, without `heal` or `down`.
 */
export async function healCluster(stateDir: string): Promise<string> {
  await assertAvailable();
  await partitionOf(stateDirPaths(stateDir).stateDir).heal();
  return "healed: every voter reaches every other";
}

/**
 * `heal` for a cluster that stops, or starts (a partition left by an AppHost killed would hold up
 * its readiness): quietly, and only where rules can have been made at all.
 */
export async function removeClusterPartition(model: AppModel): Promise<void> {
  if (process.getuid?.() !== 0) return;
  await partitionOf(model.stateDir).heal();
}
