import type { AppModel, VoterName } from "./app-model.js";
import type { AppHostCluster } from "./apphost-cluster.js";
import type { DashboardAction } from "./dashboard-messages.js";
import type { DashboardSource } from "./dashboard-server.js";
import { transferLeader } from "./leader-transfer.js";

const ACTIONS = [
  "stop",
  "start",
  "restart",
  "kill",
  "pause",
  "resume",
  "transfer-leader",
] as const satisfies readonly DashboardAction[];

/**
 * The dashboard of a cluster: its actions are the CLI's voter commands, done here on the cluster
 * `current` gives. A foreground AppHost gives the one it runs; a detached cluster's dashboard process
 * (dashboard-daemon.ts) loads the recorded one afresh for each action, as a CLI command does, since
 * other commands start and stop its voters meanwhile.
 */
export function dashboardSourceOf(model: AppModel, current: () => Promise<AppHostCluster>): DashboardSource {
  return {
    stateDir: model.stateDir,
    adminKeyFile: model.adminKeyFile,
    logs: model.voters.map((v) => ({ voter: v.name, file: v.logFile })),
    actions: ACTIONS,
    operate: async (action: DashboardAction, voter: VoterName) =>
      action === "transfer-leader"
        ? transferLeader(model.stateDir, voter)
        : (await current()).operate(action, voter),
  };
}
