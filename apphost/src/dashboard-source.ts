import type { VoterName } from "./app-model.js";
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

/** The dashboard of a cluster this process runs: its actions are the CLI's voter commands, done here. */
export function dashboardSourceOf(cluster: AppHostCluster): DashboardSource {
  return {
    stateDir: cluster.model.stateDir,
    adminKeyFile: cluster.model.adminKeyFile,
    logs: cluster.model.voters.map((v) => ({ voter: v.name, file: v.logFile })),
    actions: ACTIONS,
    operate: (action: DashboardAction, voter: VoterName) =>
      action === "transfer-leader"
        ? transferLeader(cluster.model.stateDir, voter)
        : cluster.operate(action, voter),
  };
}
