/**
 * Every failure the AppHost reports. Each class has a stable `code` that scripts and tests can match
 * on; the message is written for the person at the terminal.
 */
export abstract class AppHostError extends Error {
  abstract readonly code: string;

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The command line could not be understood. The CLI exits with status 2 for this one. */
export class UsageError extends AppHostError {
  readonly code = "AppHostUsage";
}

export class UnknownVoterError extends AppHostError {
  readonly code = "AppHostUnknownVoter";

  constructor(
    readonly voter: string,
    known: readonly string[],
  ) {
    super(`there is no voter named ${JSON.stringify(voter)} (the voters are ${known.join(", ")})`);
  }
}

/** A port the cluster needs is held by another process. */
export class PortInUseError extends AppHostError {
  readonly code = "AppHostPortInUse";

  constructor(
    readonly port: number,
    readonly host: string,
    readonly purpose: string,
    /** What else to do than stop whatever holds it. */
    remedy = "run with --isolated to use free ports",
  ) {
    super(`port ${port} on ${host} (${purpose}) is already in use: stop whatever holds it, or ${remedy}`);
  }
}

/** An environment variable the AppHost reads but cannot accept. */
export class InvalidSettingError extends AppHostError {
  readonly code = "AppHostInvalidSetting";

  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: ${reason}`);
  }
}

/** A voter exited, or could not be spawned, before it was up. Carries the voter's last log lines. */
export class VoterStartError extends AppHostError {
  readonly code = "AppHostVoterFailedToStart";

  constructor(
    readonly voter: string,
    readonly outcome: string,
    readonly lastLines: readonly string[],
    readonly logFile: string,
  ) {
    super(
      `${voter} failed to start: ${outcome}` +
        (lastLines.length > 0
          ? `\n  last lines of ${logFile}:\n${lastLines.map((l) => `    ${l}`).join("\n")}`
          : `\n  (nothing in ${logFile})`),
    );
  }
}

/** The voters ran but the cluster did not become ready in time. */
export class ReadinessTimeoutError extends AppHostError {
  readonly code = "AppHostReadinessTimeout";

  constructor(
    readonly timeoutMs: number,
    readonly summary: string,
  ) {
    super(`the cluster was not ready within ${Math.round(timeoutMs / 1000)} s: ${summary}`);
  }
}

/** A voter started in a container did not answer 200 on a health route in time, and was removed. */
export class VoterHealthTimeoutError extends AppHostError {
  readonly code = "AppHostVoterHealthTimeout";

  constructor(
    readonly voter: string,
    readonly url: string,
    readonly timeoutMs: number,
  ) {
    super(`${voter} did not answer 200 on ${url} within ${timeoutMs} ms`);
  }
}

/** Ctrl-C (or SIGTERM) arrived while the AppHost was still waiting for something. */
export class InterruptedError extends AppHostError {
  readonly code = "AppHostInterrupted";
}

/** The operation needs no cluster running in the state dir, but one is. */
export class ClusterRunningError extends AppHostError {
  readonly code = "AppHostClusterRunning";
}

/** The operation needs a cluster (state) in the state dir, but there is none. */
export class NoClusterError extends AppHostError {
  readonly code = "AppHostNoCluster";
}

/** The voter is not in the state the operation needs (e.g. start a running voter, wipe a running one). */
export class VoterStateError extends AppHostError {
  readonly code = "AppHostVoterState";
}

/** A voter could not be replaced; what was done so far is named, and running `replace` again resumes. */
export class VoterReplaceError extends AppHostError {
  readonly code = "AppHostReplaceFailed";
}

/** The state dir holds something the AppHost cannot use, or refuses to touch. */
export class StateDirError extends AppHostError {
  readonly code = "AppHostStateDir";
}

/** The state dir of a running cluster holds no admin key: what needs one cannot be asked. */
export class MissingAdminKeyError extends StateDirError {
  constructor(stateDir: string) {
    super(`${stateDir} lacks the admin key; start over with --fresh`);
  }
}

/** `--runtime container` without a Docker engine that answers; the message says what docker said. */
export class ContainerRuntimeUnavailableError extends AppHostError {
  readonly code = "AppHostContainerRuntimeUnavailable";

  constructor(reason: string) {
    super(
      `the container runtime needs a Docker engine, and none answers (${reason || "no reason given"}); ` +
        "start one (dockerd) or use --runtime process",
    );
  }
}

/** The Docker engine refused an operation on a voter's container. */
export class ContainerEngineError extends AppHostError {
  readonly code = "AppHostContainerEngine";
}

/** A command sent to the AppHost that runs a cluster in the foreground failed there, or could not be sent. */
export class ControlChannelError extends AppHostError {
  readonly code = "AppHostControlChannel";

  constructor(
    message: string,
    /** The code of the error the foreground AppHost reported, when it reported one. */
    readonly remoteCode?: string,
  ) {
    super(message);
  }
}

/** `partition` needs root and a working iptables; the message says which is missing. */
export class PartitionUnavailableError extends AppHostError {
  readonly code = "AppHostPartitionUnavailable";
}

/** An iptables command failed while partitioning or healing. */
export class PartitionFailedError extends AppHostError {
  readonly code = "AppHostPartitionFailed";
}

/** `leader` was given as a voter name, but no voter leads with a majority following it. */
export class NoLeaderError extends AppHostError {
  readonly code = "AppHostNoLeader";
}

/** The voters did not hand leadership to the voter asked for; the message says what they answered. */
export class LeaderTransferError extends AppHostError {
  readonly code = "AppHostLeaderTransferFailed";
}

/** A voter's admission status could not be read; the message says why. */
export class AdmissionUnavailableError extends AppHostError {
  readonly code = "AppHostAdmissionUnavailable";
}

/** The dashboard's page has not been built (`pnpm run setup` builds it); the cluster runs without it. */
export class DashboardAssetsError extends AppHostError {
  readonly code = "AppHostDashboardAssets";
}

/** A detached cluster's dashboard process failed to start; the message says why and names its log. */
export class DashboardProcessError extends AppHostError {
  readonly code = "AppHostDashboardProcess";
}

/** `publish` cannot write its output where it was asked to; the message says why and what to do. */
export class PublishOutputError extends AppHostError {
  readonly code = "AppHostPublishOutput";
}

/** The sources a voter runs could not be transpiled (voter-build.ts): the message names the file. */
export class VoterBuildError extends AppHostError {
  readonly code = "AppHostVoterBuild";
}

/** The voter image's build context could not be staged, or `docker build` failed. */
export class ImageBuildError extends AppHostError {
  readonly code = "AppHostImageBuild";
}

/**
 * The running cluster refused the admin key `up` was given (it keeps the one it was bootstrapped
 * with), so `up` does not report success and does not record that key in admin.key.
 */
export class AdminKeyRejectedError extends AppHostError {
  readonly code = "AppHostAdminKeyRejected";
}

/** A file the AppHost needs could not be read or written; the message names it and the system's reason. */
export class FileSystemError extends AppHostError {
  readonly code = "AppHostFileSystem";
}
