import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type AdminKeyVerdict, checkAdminKey } from "./admin-key-check.js";
import { buildAppModel, defaultPorts, httpUrlOf, stateDirPaths, VOTER_NAMES } from "./app-model.js";
import { AppHostCluster } from "./apphost-cluster.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { AdminKeyRejectedError, ClusterRunningError, StateDirError } from "./apphost-errors.js";
import { isStateRunning, readState } from "./apphost-state.js";
import { loadCredentials, writePrivateFile } from "./cluster-credentials.js";
import type { ClusterSnapshot } from "./cluster-readiness.js";
import { forwardConfig, refuseLocalTls } from "./config-forwarding.js";
import { pickVoterPorts } from "./port-allocation.js";
import { assertUsableStateDir } from "./state-dir-check.js";
import { voterGidsHere } from "./voter-groups.js";
import type { VoterRuntime } from "./voter-runtime.js";

export interface ClusterSetup {
  readonly stateDir: string;
  /** Free ports instead of the defaults. */
  readonly isolated: boolean;
  /** Wipe the state dir first. */
  readonly fresh: boolean;
  /** The variables to forward, `.env` and environment already merged. */
  readonly variables: Iterable<{ readonly name: string; readonly value: string }>;
  readonly supervised: boolean;
  /** How the voters run: `voterRuntimeOf(kind)` for the CLI, `testRuntimeOf(kind)` for the testing API. */
  readonly runtime: VoterRuntime;
}

export interface PreparedCluster {
  readonly cluster: AppHostCluster;
  /**
   * Confirms with one admin call on the ready cluster's leader that it accepts the admin key, then
   * records the key in the state dir. An admin key from the environment is only recorded then, so a
   * key the voters refuse never replaces the kept one: AdminKeyRejectedError, admin.key untouched.
   * `votersKeepRunning` says what the message tells about the voters.
   */
  confirmAdminKey(snapshot: ClusterSnapshot, votersKeepRunning: boolean): Promise<void>;
}

/** Files only an AppHost writes: a directory holding none of them is not a state dir. */
const STATE_DIR_MARKERS = ["apphost.json", "admin.key", "cluster.secret", "cluster.json"];

/**
 * What an AppHost keeps in a state dir, and all `--fresh` removes: the markers, what the voters
 * remembered (`members.json`), the logs, the voters' data dirs, the control socket and state files
 * being replaced. Anything else there (the state dir given may be a project's own directory) stays.
 */
function ownedByAppHost(entry: string): boolean {
  return (
    STATE_DIR_MARKERS.includes(entry) ||
    ["members.json", "logs", "apphost.sock", ...VOTER_NAMES].includes(entry) ||
    /^apphost\.json\.\d+\.tmp$/.test(entry)
  );
}

function readStateIfReadable(stateFile: string): ReturnType<typeof readState> {
  try {
    return readState(stateFile);
  } catch (error) {
    if (error instanceof StateDirError) return undefined;
    throw error;
  }
}

function wipeStateDir(stateDir: string): void {
  if (!existsSync(stateDir)) return;
  const entries = readdirSync(stateDir);
  if (entries.length > 0 && !entries.some((e) => STATE_DIR_MARKERS.includes(e))) {
    throw new StateDirError(
      `refusing to wipe ${stateDir} for --fresh: it does not look like a KeyLoad state dir`,
    );
  }
  for (const entry of entries) {
    if (ownedByAppHost(entry)) rmSync(join(stateDir, entry), { recursive: true, force: true });
  }
}

/**
 * Builds the cluster for a state dir: refuses a state dir whose cluster is still running, wipes it when
 * asked, forwards the configuration, picks the ports and loads (or generates) the credentials.
 */
export async function prepareCluster(setup: ClusterSetup): Promise<PreparedCluster> {
  assertUsableStateDir(setup.stateDir);
  const probe = stateDirPaths(setup.stateDir);
  // A state file that cannot be read names no voter to stop: --fresh starts over without it.
  const previous = setup.fresh ? readStateIfReadable(probe.stateFile) : readState(probe.stateFile);
  if (previous && isStateRunning(previous)) {
    throw new ClusterRunningError(
      `a cluster is already running in ${probe.stateDir}: stop it with \`down\`, or use another --state-dir`,
    );
  }
  if (setup.fresh) wipeStateDir(probe.stateDir);
  const forwarded = forwardConfig(setup.variables);
  refuseLocalTls(forwarded.voters);
  const ports = setup.isolated ? await pickVoterPorts(APPHOST_DEFAULTS.host) : defaultPorts();
  const model = buildAppModel(setup.stateDir, ports);
  const credentials = loadCredentials(model, forwarded.adminKey);
  const voterGids = voterGidsHere();
  const cluster = new AppHostCluster({
    model,
    runtime: setup.runtime,
    credentials,
    forwarded: forwarded.voters,
    supervised: setup.supervised,
    ...(voterGids === undefined ? {} : { voterGids }),
  });
  return {
    cluster,
    confirmAdminKey: async (snapshot, votersKeepRunning) => {
      const leader = model.voters.find((v) => v.name === snapshot.leader) ?? model.voters[0]!;
      const verdict = await checkAdminKey(httpUrlOf(leader), credentials.adminKey);
      if (!verdict.accepted) {
        throw new AdminKeyRejectedError(
          adminKeyMismatch(model.adminKeyFile, credentials.adminKeyIsKept, verdict, votersKeepRunning),
        );
      }
      if (!credentials.adminKeyIsKept) writePrivateFile(model.adminKeyFile, credentials.adminKey);
    },
  };
}

function adminKeyMismatch(
  adminKeyFile: string,
  fromFile: boolean,
  verdict: Exclude<AdminKeyVerdict, { accepted: true }>,
  votersKeepRunning: boolean,
): string {
  const key = fromFile ? `the admin key in ${adminKeyFile}` : "KeyLoad__Bootstrap__AdminKey";
  const what = verdict.refused
    ? `the cluster refuses ${key} (${verdict.reason}): a cluster's admin key is set when it bootstraps, and a later up cannot change it`
    : `the cluster did not confirm ${key} (${verdict.reason})`;
  const kept = fromFile ? "" : `; ${adminKeyFile} is left as it was`;
  const voters = votersKeepRunning
    ? "the voters keep running (stop them with `down`)"
    : "the voters were stopped";
  return `${what}${kept}; ${voters}. Use the key the cluster was bootstrapped with, or start over with --fresh`;
}
