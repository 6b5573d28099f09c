import { type AdmissionUsage, admissionUsage } from "./admission-format.js";
import {
  type AppModel,
  buildAppModel,
  defaultPorts,
  httpUrlOf,
  peerAddressOf,
  stateDirPaths,
} from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { type AppHostState, readState } from "./apphost-state.js";
import { readKeptCredentials } from "./cluster-credentials.js";
import { configuredMembers } from "./configured-members.js";
import { recallMembers, rememberMembers } from "./member-memory.js";
import { isAlive, type ProcessState, processState } from "./process-table.js";
import type { RuntimeKind } from "./runtime-kind.js";
import type { VoterAdmission } from "./voter-admission.js";
import { loggedFailStop, type VoterFailure } from "./voter-failure.js";
import {
  type MemberKind,
  probeVoter,
  UNREACHABLE,
  type VoterHealth,
  type VoterRole,
} from "./voter-health.js";

/**
 * A voter's state in `status`: its process's, or `failed` once it has ended on its own with a
 * non-zero status (contract section 8, fail-stop), until it is started again.
 */
export type VoterState = ProcessState | "failed";

/**
 * What the voter's health says (contract section 8): `ready` (a member following a leader, caught up),
 * `live` (answering, not ready), `failed` (fail-stop) or `unknown` (no answer: stopped, paused, gone).
 */
export type HealthState = "ready" | "live" | "failed" | "unknown";

/** `status --json`, contract section 2, field for field, and `failure` (a failed voter's only). */
export interface VoterStatus {
  readonly name: string;
  readonly pid: number | null;
  readonly httpUrl: string;
  readonly peerAddress: string;
  readonly dataDir: string;
  readonly state: VoterState;
  readonly role: VoterRole;
  readonly term: number | null;
  readonly commitIndex: number | null;
  readonly appliedIndex: number | null;
  readonly health: HealthState;
  /**
   * What it is in the configuration it has applied or, when it cannot answer, in a running voter's;
   * `learner` while it runs as a new member not yet added; when no voter can say, what it was last seen
   * to be (member-memory.ts).
   */
  readonly member: MemberKind;
  readonly forwardedEnv: Readonly<Record<string, string>>;
  /** How it ended and its last log lines; present when `state` is `failed`. */
  readonly failure?: VoterFailure;
}

export interface ClusterStatus {
  /** The dashboard's URL; null while none is served. */
  readonly dashboardUrl: string | null;
  readonly runtime: RuntimeKind;
  readonly stateDir: string;
  readonly adminKeyFile: string;
  readonly voters: readonly VoterStatus[];
}

/**
 * The status of the cluster in `stateDir`, from the AppHost's state and each running voter's own
 * `/health/ready`. A state dir with no cluster reports the default voters, stopped.
 */
export async function clusterStatus(stateDir: string): Promise<ClusterStatus> {
  const stateFile = stateDirPaths(stateDir).stateFile;
  const state = readState(stateFile);
  const model = buildAppModel(stateDir, state?.voters ?? defaultPorts());
  const probed = await Promise.all(
    model.voters.map(async (voter, i): Promise<ProbedStatus> => {
      const record = state?.voters[i];
      const processRecord = record?.process ?? null;
      const current = processState(processRecord);
      // A voter recorded as started whose process is gone ended without the AppHost seeing it (a
      // detached cluster): its log tells whether it failed.
      const failure =
        current !== "stopped"
          ? null
          : (record?.failure ??
            (processRecord === null
              ? null
              : loggedFailStop(voter.logFile, APPHOST_DEFAULTS.failureLogLines)));
      // A paused voter cannot answer; asking would only wait for the timeout.
      const health =
        current === "running"
          ? await probeVoter(httpUrlOf(voter), APPHOST_DEFAULTS.probeTimeoutMs)
          : UNREACHABLE;
      return {
        name: voter.name,
        pid: current === "stopped" ? null : (processRecord?.pid ?? null),
        httpUrl: httpUrlOf(voter),
        peerAddress: peerAddressOf(voter),
        dataDir: voter.dataDir,
        state: failure === null ? current : "failed",
        role: health.role,
        term: health.term,
        commitIndex: health.commitIndex,
        appliedIndex: health.appliedIndex,
        health: failure === null ? healthState(health) : "failed",
        member: health.member,
        forwardedEnv: record?.forwardedEnv ?? {},
        ...(failure === null ? {} : { failure }),
      };
    }),
  );
  const voters = withRememberedMembers(await withConfiguredMembers(probed, model), model.membersFile);
  return {
    dashboardUrl: state === undefined ? null : dashboardUrlOf(state),
    runtime: state?.runtime ?? APPHOST_DEFAULTS.runtime,
    stateDir: model.stateDir,
    adminKeyFile: model.adminKeyFile,
    voters,
  };
}

/**
 * The dashboard being served: the foreground AppHost's or a detached cluster's dashboard process, only
 * while that very process is alive (a record outlives a process killed by hand).
 */
function dashboardUrlOf(state: AppHostState): string | null {
  if (state.owner && isAlive(state.owner)) return state.owner.dashboardUrl ?? null;
  return state.dashboard && isAlive(state.dashboard) ? state.dashboard.url : null;
}

/**
 * Fills in `member` for the voters that cannot answer for themselves (health unknown or failed) from the
 * configuration a running voter has applied, the leader's when it answers. With no running voter, or
 * no admin key kept, they stay null: no one can say.
 */
async function withConfiguredMembers(voters: ProbedStatus[], model: AppModel): Promise<ProbedStatus[]> {
  const silent = voters.filter((v) => v.health === "unknown" || v.health === "failed");
  const answering = voters.filter((v) => v.health === "ready" || v.health === "live");
  const asked = answering.find((v) => v.role === "leader") ?? answering[0];
  const adminKey =
    asked === undefined || silent.length === 0 ? undefined : readKeptCredentials(model)?.adminKey;
  if (asked === undefined || adminKey === undefined) return voters;
  const members = await configuredMembers(asked.httpUrl, adminKey, APPHOST_DEFAULTS.probeTimeoutMs);
  if (members === null) return voters;
  return voters.map((v) => (silent.includes(v) ? { ...v, member: members.get(v.name) ?? null } : v));
}

/**
 * Gives every voter a `member` (the contract has no "unknown" for it): one running but in no
 * configuration yet is a new member on its way to being a learner; one no voter can speak for is what
 * it was last seen to be. What was seen is remembered for next time.
 */
/** A voter's status as probed, before every voter is given a `member`. */
type ProbedStatus = Omit<VoterStatus, "member"> & { readonly member: MemberKind | null };

function withRememberedMembers(voters: readonly ProbedStatus[], file: string): VoterStatus[] {
  const seen = new Map<string, MemberKind>();
  for (const v of voters) if (v.member !== null) seen.set(v.name, v.member);
  const remembered = recallMembers(file);
  rememberMembers(file, seen);
  return voters.map((v) => {
    if (v.member !== null) return { ...v, member: v.member };
    const answering = v.health === "ready" || v.health === "live";
    return { ...v, member: answering ? "learner" : (remembered.get(v.name) ?? "voter") };
  });
}

function healthState(health: VoterHealth): HealthState {
  if (!health.reachable) return "unknown";
  if (health.failed) return "failed";
  return health.ready ? "ready" : "live";
}

/**
 * The same status as a table for a person, with each voter's admission usage (used/limit) where
 * `admission` has it.
 */
export function formatStatus(status: ClusterStatus, admission: readonly VoterAdmission[] = []): string {
  const orDash = (value: number | string | null): string => (value === null ? "-" : String(value));
  const usageOf = (name: string): AdmissionUsage | undefined => {
    const answer = admission.find((a) => a.name === name)?.admission;
    return answer ? admissionUsage(answer) : undefined;
  };
  const rows = status.voters.map((v) => [
    v.name,
    v.state,
    v.health,
    v.role,
    orDash(v.member),
    orDash(v.term),
    orDash(v.commitIndex),
    orDash(v.appliedIndex),
    usageOf(v.name)?.dataLane ?? "-",
    usageOf(v.name)?.controlLane ?? "-",
    usageOf(v.name)?.httpData ?? "-",
    usageOf(v.name)?.httpControl ?? "-",
    orDash(v.pid),
    v.httpUrl,
    v.peerAddress,
  ]);
  const header = [
    "VOTER",
    "STATE",
    "HEALTH",
    "ROLE",
    "MEMBER",
    "TERM",
    "COMMIT",
    "APPLIED",
    "DATA LANE",
    "CONTROL LANE",
    "HTTP DATA",
    "HTTP CONTROL",
    "PID",
    "HTTP",
    "PEER",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const forwarded = status.voters
    .filter((v) => Object.keys(v.forwardedEnv).length > 0)
    .map(
      (v) =>
        `  ${v.name}: ${Object.entries(v.forwardedEnv)
          .map(([k, value]) => `${k}=${value}`)
          .join(" ")}`,
    );
  const failures = status.voters.flatMap((v) =>
    v.failure === undefined
      ? []
      : [
          `${v.name} failed (${v.failure.exit} at ${v.failure.at}); its last log lines:`,
          ...v.failure.lastLines,
        ],
  );
  return [
    line(header),
    ...rows.map(line),
    "",
    ...(failures.length > 0 ? [...failures, ""] : []),
    `state dir: ${status.stateDir}`,
    `admin key: ${status.adminKeyFile}`,
    ...(status.dashboardUrl === null ? [] : [`dashboard: ${status.dashboardUrl}`]),
    ...(forwarded.length > 0 ? ["forwarded configuration:", ...forwarded] : []),
  ].join("\n");
}
