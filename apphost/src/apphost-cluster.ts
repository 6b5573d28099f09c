import {
  type AppModel,
  buildAppModel,
  type ClusterCredentials,
  findVoter,
  httpUrlOf,
  stateDirPaths,
  VOTER_NAMES,
  type VoterName,
  type VoterResource,
  voterWiring,
} from "./app-model.js";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import {
  NoClusterError,
  ReadinessTimeoutError,
  StateDirError,
  VoterStartError,
  VoterStateError,
} from "./apphost-errors.js";
import {
  type AppHostState,
  type DashboardRecord,
  type OwnerRecord,
  readState,
  writeState,
} from "./apphost-state.js";
import { bootstrapIdFor, recordBootstrapped } from "./cluster-bootstrap.js";
import { readKeptCredentials } from "./cluster-credentials.js";
import { removeClusterPartition } from "./cluster-partition.js";
import {
  type ClusterSnapshot,
  probeCluster,
  type ReadinessOptions,
  waitForClusterReady,
} from "./cluster-readiness.js";
import { withLocalVoterDefaults } from "./config-forwarding.js";
import type { VoterOperation } from "./control-channel.js";
import { isProbeLine } from "./log-line-format.js";
import { assertPortsFree } from "./port-allocation.js";
import { isAlive, type ProcessRecord, processState, signalProcess, waitForExit } from "./process-table.js";
import type { VoterFailure } from "./voter-failure.js";
import { voterGidsHere } from "./voter-groups.js";
import { isLive } from "./voter-health.js";
import { lastLines } from "./voter-log-file.js";
import { replaceVoter } from "./voter-replacement.js";
import {
  describeExit,
  type VoterExit,
  type VoterLaunch,
  type VoterProcess,
  type VoterRuntime,
  voterRuntimeOf,
} from "./voter-runtime.js";

export interface AppHostClusterOptions {
  readonly model: AppModel;
  readonly runtime: VoterRuntime;
  readonly credentials: ClusterCredentials;
  /** Each voter's forwarded user configuration. */
  readonly forwarded: Readonly<Record<VoterName, Readonly<Record<string, string>>>>;
  /** Voters die with this process (foreground and tests) or are detached (`up --detach`, later commands). */
  readonly supervised: boolean;
  /** The foreground AppHost that owns the cluster, recorded so other commands can reach it. */
  readonly owner?: OwnerRecord | null;
  /** The dashboard process a detached `up` left serving, recorded so `status` finds it and `down` stops it. */
  readonly dashboard?: DashboardRecord | null;
  readonly voterGids?: Readonly<Record<VoterName, number>>;
  readonly processes?: Readonly<Record<VoterName, ProcessRecord | null>>;
  /** How each voter's last run failed, as recorded (see VoterFailure). */
  readonly failures?: Readonly<Record<VoterName, VoterFailure | null>>;
}

export type VoterExitListener = (voter: VoterName, exit: VoterExit) => void;

/**
 * The cluster the AppHost runs: three voter processes (or containers) on this machine and the AppHost's
 * record of them, not the Raft core's in-process test cluster (InMemoryRaftCluster). Every lifecycle
 * operation goes through here, for `up`, for the debugging commands and for the testing API alike,
 * and each one keeps the state file current.
 */
export class AppHostCluster {
  readonly model: AppModel;
  readonly runtime: VoterRuntime;
  private readonly credentials: ClusterCredentials;
  private readonly forwarded: AppHostClusterOptions["forwarded"];
  private readonly supervised: boolean;
  private readonly voterGids: AppHostClusterOptions["voterGids"];
  private owner: OwnerRecord | null;
  private dashboard: DashboardRecord | null;
  private readonly processes = new Map<VoterName, ProcessRecord | VoterProcess | null>();
  private readonly failures = new Map<VoterName, VoterFailure | null>();
  private readonly exitListeners: VoterExitListener[] = [];
  private readonly stopping = new Map<ProcessRecord, Promise<string>>();

  constructor(options: AppHostClusterOptions) {
    this.model = options.model;
    this.runtime = options.runtime;
    this.credentials = options.credentials;
    this.forwarded = options.forwarded;
    this.supervised = options.supervised;
    this.voterGids = options.voterGids;
    this.owner = options.owner ?? null;
    this.dashboard = options.dashboard ?? null;
    for (const name of VOTER_NAMES) {
      this.processes.set(name, options.processes?.[name] ?? null);
      this.failures.set(name, options.failures?.[name] ?? null);
    }
  }

  /** The cluster recorded in `stateDir`, to operate on it from another command. */
  static async load(stateDir: string): Promise<{ cluster: AppHostCluster; state: AppHostState }> {
    const { stateFile } = stateDirPaths(stateDir);
    const state = readState(stateFile);
    if (!state) throw new NoClusterError(`there is no cluster in ${stateDir} (run \`up\` first)`);
    const model = buildAppModel(stateDir, state.voters);
    const credentials = readKeptCredentials(model);
    if (!credentials) {
      throw new StateDirError(
        `${model.stateDir} lacks the cluster secret or the admin key; start over with --fresh`,
      );
    }
    // A voter started again runs under its own group as `up` started it (cluster-setup.ts).
    const voterGids = voterGidsHere();
    const forwarded = {} as Record<VoterName, Readonly<Record<string, string>>>;
    const processes = {} as Record<VoterName, ProcessRecord | null>;
    const failures = {} as Record<VoterName, VoterFailure | null>;
    for (const record of state.voters) {
      forwarded[record.name] = record.forwardedEnv;
      processes[record.name] = record.process;
      failures[record.name] = record.failure ?? null;
    }
    const cluster = new AppHostCluster({
      model,
      runtime: await voterRuntimeOf(state.runtime),
      credentials,
      forwarded,
      supervised: false,
      // An owner killed with SIGKILL could not clear its record; its voters died with it.
      owner: isAlive(state.owner) ? state.owner : null,
      dashboard: state.dashboard && isAlive(state.dashboard) ? state.dashboard : null,
      ...(voterGids === undefined ? {} : { voterGids }),
      processes,
      failures,
    });
    return { cluster, state };
  }

  voter(name: VoterName): VoterResource {
    return findVoter(this.model, name);
  }

  process(name: VoterName): ProcessRecord | null {
    return this.processes.get(name) ?? null;
  }

  /** How the voter's last run failed, if it ended on its own with a non-zero status; null otherwise. */
  failure(name: VoterName): VoterFailure | null {
    return this.failures.get(name) ?? null;
  }

  get adminKey(): string {
    return this.credentials.adminKey;
  }

  /** Called whenever a voter this process started exits, whatever the cause. */
  onVoterExit(listener: VoterExitListener): void {
    this.exitListeners.push(listener);
  }

  setOwner(owner: OwnerRecord | null): void {
    this.owner = owner;
    this.persist();
  }

  setDashboard(dashboard: DashboardRecord | null): void {
    this.dashboard = dashboard;
    this.persist();
  }

  persist(): void {
    const state: AppHostState = {
      version: 1,
      runtime: this.runtime.kind,
      mode: this.supervised ? "foreground" : "detached",
      owner: this.owner,
      dashboard: this.dashboard,
      voters: this.model.voters.map((v) => {
        const running = this.processes.get(v.name);
        return {
          name: v.name,
          httpPort: v.httpPort,
          peerPort: v.peerPort,
          forwardedEnv: this.forwarded[v.name],
          process: running ? { pid: running.pid, startTicks: running.startTicks } : null,
          failure: this.failures.get(v.name) ?? null,
        };
      }),
    };
    writeState(this.model.stateFile, state);
  }

  /**
   * Starts every voter and waits for the cluster to be ready. A voter that exits first ends the wait
   * with VoterStartError, as does `readiness.failure`; on any failure the voters started are stopped.
   */
  async up(readiness: ReadinessOptions = {}): Promise<ClusterSnapshot> {
    await assertPortsFree(this.model.voters);
    await this.runtime.removeLeftovers(this.model);
    await removeClusterPartition(this.model);
    const waitFor = {
      health: "ready",
      timeoutMs: readiness.timeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs,
    } as const;
    // All at once: a runtime that waits for each voter to be ready needs the others up to elect a leader.
    const spawns = await Promise.allSettled(
      VOTER_NAMES.map(async (name) => ({ name, process: await this.spawn(name, waitFor) })),
    );
    this.persist();
    const refused = spawns.find((s) => s.status === "rejected");
    if (refused) {
      await this.stopAll();
      throw refused.reason;
    }
    const started = spawns.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const failure = Promise.race([
      ...started.map(({ name, process }) =>
        process.exited.then((exit): never => {
          throw this.startFailure(name, process, describeExit(exit));
        }),
      ),
      ...(readiness.failure ? [readiness.failure] : []),
    ]);
    failure.catch(() => {});
    const targets = this.model.voters.map((v) => ({ name: v.name, httpUrl: httpUrlOf(v) }));
    try {
      const snapshot = await waitForClusterReady(targets, { ...readiness, failure });
      recordBootstrapped(this.model);
      return snapshot;
    } catch (err) {
      // Which voters were not ready, asked before they stop, so their last lines say why.
      const unready =
        err instanceof ReadinessTimeoutError
          ? (await probeCluster(targets, Date.now())).voters.filter((v) => !v.health.ready)
          : [];
      await this.stopAll();
      if (err instanceof ReadinessTimeoutError) {
        const lastWords = unready.flatMap((v) => [
          `${v.name}'s last log lines:`,
          // Without the AppHost's own health probes, which fill a voter's log while it waits.
          ...lastLines(
            this.voter(v.name as VoterName).logFile,
            APPHOST_DEFAULTS.failureLogLines,
            0,
            (line) => !isProbeLine(line),
          ).map((line) => `  ${line}`),
        ]);
        throw new ReadinessTimeoutError(
          err.timeoutMs,
          [`${err.summary}; the voters' logs are in ${this.model.logDir}`, ...lastWords].join("\n"),
        );
      }
      throw err;
    }
  }

  /** Starts one stopped voter and waits until its HTTP endpoint answers. */
  async start(name: VoterName, timeoutMs: number = APPHOST_DEFAULTS.startTimeoutMs): Promise<string> {
    const current = this.process(name);
    if (processState(current) !== "stopped") return `${name} is already running (pid ${current?.pid})`;
    const voter = this.voter(name);
    await assertPortsFree([voter], APPHOST_DEFAULTS.portReleaseMs);
    const started = await this.spawn(name, { health: "live", timeoutMs });
    this.persist();
    const deadline = Date.now() + timeoutMs;
    let exit: VoterExit | undefined;
    void started.exited.then((e) => {
      exit = e;
    });
    while (!(await isLive(httpUrlOf(voter), APPHOST_DEFAULTS.probeTimeoutMs))) {
      if (exit) throw this.startFailure(name, started, describeExit(exit));
      if (Date.now() >= deadline) {
        await this.kill(name);
        throw this.startFailure(
          name,
          started,
          `did not answer on ${httpUrlOf(voter)} within ${timeoutMs} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, APPHOST_DEFAULTS.pollIntervalMs));
    }
    recordBootstrapped(this.model);
    return `${name} started (pid ${started.pid})`;
  }

  /**
   * SIGTERM, then SIGKILL once `graceMs` has passed. A paused voter is resumed so it can act on SIGTERM.
   * Stopping a voter that is already stopping joins that stop: a second SIGTERM would make the voter
   * skip its graceful shutdown.
   */
  stop(name: VoterName, graceMs: number = APPHOST_DEFAULTS.stopGraceMs): Promise<string> {
    const record = this.process(name);
    const pending = record && this.stopping.get(record);
    if (pending) return pending;
    if (record === null || !signalProcess(record, "SIGTERM")) {
      this.forget(name, record);
      return Promise.resolve(`${name} is not running`);
    }
    const stopped = (async () => {
      signalProcess(record, "SIGCONT");
      let outcome = `${name} stopped`;
      if (!(await waitForExit(record, graceMs))) {
        signalProcess(record, "SIGKILL");
        await waitForExit(record, graceMs);
        outcome = `${name} did not stop within ${graceMs} ms and was killed`;
      }
      this.forget(name, record);
      this.stopping.delete(record);
      return outcome;
    })();
    this.stopping.set(record, stopped);
    return stopped;
  }

  async kill(name: VoterName): Promise<string> {
    const record = this.process(name);
    if (record === null || !signalProcess(record, "SIGKILL")) {
      this.forget(name, record);
      return `${name} is not running`;
    }
    await waitForExit(record, APPHOST_DEFAULTS.stopGraceMs);
    this.forget(name, record);
    return `${name} killed`;
  }

  async restart(name: VoterName): Promise<string> {
    await this.stop(name);
    await this.start(name);
    return `${name} restarted (pid ${this.process(name)?.pid})`;
  }

  pause(name: VoterName): string {
    if (processState(this.process(name)) === "paused") return `${name} is already paused`;
    return this.signalRunning(name, "SIGSTOP", "paused");
  }

  resume(name: VoterName): string {
    // As `start` of a running voter: nothing to do, and said so.
    if (processState(this.process(name)) === "running") return `${name} is already running`;
    return this.signalRunning(name, "SIGCONT", "resumed");
  }

  /**
   * Replaces a voter whose data is lost (or suspect) by a new member: see voter-replacement.ts.
   * `onStep` is told each step as it is done.
   */
  replace(name: VoterName, onStep?: (line: string) => void): Promise<string> {
    return replaceVoter(this, name, onStep === undefined ? {} : { onStep });
  }

  /** One debugging command on one voter, by its name on the command line. */
  async operate(
    operation: VoterOperation,
    name: VoterName,
    onStep?: (line: string) => void,
  ): Promise<string> {
    switch (operation) {
      case "start":
        return this.start(name);
      case "stop":
        return this.stop(name);
      case "kill":
        return this.kill(name);
      case "restart":
        return this.restart(name);
      case "pause":
        return this.pause(name);
      case "resume":
        return this.resume(name);
      case "replace":
        return this.replace(name, onStep);
    }
  }

  /** Stops every voter gracefully, all at once; a stopped cluster keeps no partition (`partition`). */
  async stopAll(graceMs: number = APPHOST_DEFAULTS.stopGraceMs): Promise<void> {
    await Promise.all(VOTER_NAMES.map((name) => this.stop(name, graceMs)));
    await this.runtime.removeLeftovers(this.model);
    await removeClusterPartition(this.model);
  }

  async killAll(): Promise<void> {
    await Promise.all(VOTER_NAMES.map((name) => this.kill(name)));
    await this.runtime.removeLeftovers(this.model);
    await removeClusterPartition(this.model);
  }

  private signalRunning(name: VoterName, signal: NodeJS.Signals, done: string): string {
    const record = this.process(name);
    if (record === null || !signalProcess(record, signal)) {
      throw new VoterStateError(`${name} is not running`);
    }
    return `${name} ${done} (pid ${record.pid})`;
  }

  private async spawn(name: VoterName, waitFor: VoterLaunch["waitFor"]): Promise<VoterProcess> {
    const voter = this.voter(name);
    const gid = this.voterGids?.[name];
    // A voter counts as started once it kept its identity, not when spawned (cluster-bootstrap.ts).
    const bootstrapId = bootstrapIdFor(this.model, name);
    const started = await this.runtime.start({
      voter,
      stateDir: this.model.stateDir,
      env: {
        ...withLocalVoterDefaults(this.forwarded[name]),
        ...voterWiring(this.model, voter, this.credentials, bootstrapId),
      },
      supervised: this.supervised,
      waitFor,
      ...(gid === undefined ? {} : { gid }),
    });
    this.processes.set(name, started);
    this.failures.set(name, null);
    void started.exited.then((exit) => {
      // Whatever it got to before it exited is remembered, in case its data is lost before its next start.
      try {
        recordBootstrapped(this.model);
      } catch {
        // A damaged record is reported at the next start; an exit is no place to throw.
      }
      // The record may already be a newer process of the same voter.
      if (this.processes.get(name) === started) {
        if (this.endedOnItsOwn(started, exit)) this.failures.set(name, this.failureOf(voter, started, exit));
        this.forget(name, started);
      }
      for (const listener of this.exitListeners) listener(name, exit);
    });
    return started;
  }

  /**
   * Whether the voter ended with a non-zero status the AppHost did not ask for, as a voter whose
   * storage or apply failed does (fail-stop). A stop's SIGTERM and a kill are asked for.
   */
  private endedOnItsOwn(started: VoterProcess, exit: VoterExit): boolean {
    return !this.stopping.has(started) && exit.code !== null && exit.code !== 0;
  }

  private failureOf(voter: VoterResource, started: VoterProcess, exit: VoterExit): VoterFailure {
    return {
      exit: describeExit(exit),
      at: new Date().toISOString(),
      lastLines: lastLines(voter.logFile, APPHOST_DEFAULTS.failureLogLines, started.logOffset),
    };
  }

  private forget(name: VoterName, record: ProcessRecord | null): void {
    if (this.processes.get(name) !== record) return;
    this.processes.set(name, null);
    this.persist();
  }

  private startFailure(name: VoterName, started: VoterProcess, outcome: string): VoterStartError {
    const voter = this.voter(name);
    return new VoterStartError(
      name,
      outcome,
      lastLines(voter.logFile, APPHOST_DEFAULTS.failureLogLines, started.logOffset),
      voter.logFile,
    );
  }
}
