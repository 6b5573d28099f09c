import pino, { type Logger } from "pino";
import { memberName } from "../../peer/member-name.js";
import { bootstrapState } from "../../raft/bootstrap.js";
import type { RaftOptions } from "../../raft/raft-config.js";
import type { RaftNode, RaftStatus } from "../../raft/raft-node.js";
import { SeededRandom } from "../../raft/seeded-random.js";
import type { Entry, HardState, Message, NodeId, Ready } from "../../raft/types.js";
import type { StoreOp } from "../../storage/durable-log-store.js";
import { DurableLogWriter } from "../../storage/durable-log-writer.js";
import type { LogStore } from "../../storage/log-store.js";
import { SnapshotPolicy } from "../../storage/snapshot-policy.js";
import type { ForwardTransport } from "../../voter/command-router.js";
import { RaftDriver } from "../../voter/raft-driver.js";
import { recoverAtStart } from "../../voter/start-recovery.js";
import { describeError } from "../sim-failure.js";
import { type CommandPathTuning, DriverCommandPath } from "./driver-command-path.js";
import { DriverMemberJoin, type MemberJoinTuning } from "./driver-member-join.js";
import { SimDriverState, type StateObserver } from "./sim-driver-state.js";
import type { SimLogDisk } from "./sim-log-disk.js";
import { SimLogStore } from "./sim-log-store.js";
import type { SimPeerEndpoint, SimRequestNetwork } from "./sim-peer-requests.js";
import type { SimStateDisk } from "./sim-state-disk.js";
import { SimTransport } from "./sim-transport.js";
import { TimerOwner, type VirtualClock } from "./virtual-clock.js";

/** The driver's settings a run chooses once for every node. */
export interface DriverTuning {
  readonly electionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly followerApplyHoldMs: number;
  readonly maxUncommittedBytes: number;
  readonly snapshotChunkBytes: number;
  readonly snapshotEntries: number;
  readonly retainEntries: number;
  /** The range of one fsync's time, log and state alike. */
  readonly fsyncDelay: readonly [number, number];
  readonly commands: CommandPathTuning;
}

/** What a node's process tells the run about what it does. */
export interface NodeWatch extends StateObserver {
  /** A life opened the log, which holds `hardState`. */
  opened(hardState: HardState): void;
  /** The log took `ops` in one group commit, each refused (an Error) or not; `log` reads it after. */
  committed(ops: readonly StoreOp[], results: readonly (Error | null)[], log: LogStore): void;
  /** The core handed out `rd`, with `status` as of it; `log` reads the log it is about to extend. */
  ready(rd: Ready, status: RaftStatus, log: LogStore): void;
  /** The driver sends `m`; `durable` is what the log's disk holds durably as it does. */
  sending(m: Message, durable: SimLogDisk["durableLog"]): void;
  /** Something broke a rule in the node's own code paths (a check threw inside the driver). */
  violation(error: unknown): void;
  log(line: string): void;
}

/**
 * One simulated voter: a log disk and a state disk that outlive its crashes, and, while it runs, one
 * process life: the production RaftDriver with its DurableLogWriter, over a SimLogStore, a simulated
 * state machine, the simulated network and this life's timers. Start-up is the voter's own
 * (recoverAtStart) and takes simulated time, as the log's writes do.
 */
export class DriverNode {
  /** Bumped at every start; names the life in traces and read IDs. */
  life = 0;
  owner: TimerOwner | null = null;
  driver: RaftDriver | null = null;
  state: SimDriverState | null = null;
  store: SimLogStore | null = null;
  writer: DurableLogWriter | null = null;
  /** This life's shutdown, once it was told to stop. */
  private stopping: Promise<void> | null = null;
  /** The storage fault injected into this life, if any: its driver is to stop on it, as a voter's does. */
  injected: Error | null = null;
  transport: SimTransport | null = null;
  /** This life's end of the peer network's requests, and its command path over the driver. */
  endpoint: SimPeerEndpoint | null = null;
  commands: DriverCommandPath | null = null;
  /** This life's part in new members' joins, in runs whose new members ask to join. */
  joins: DriverMemberJoin | null = null;
  /** Removed for good: never started again. */
  retired = false;

  constructor(
    readonly id: NodeId,
    /** One of the bootstrapped voters; a node that joins later starts with an empty log. */
    readonly initial: boolean,
    readonly logDisk: SimLogDisk,
    readonly stateDisk: SimStateDisk,
    /** This node's clock rate against the simulation's (see TimerOwner.skew). */
    private readonly skew: number,
  ) {}

  /** Whether a process of this node runs (it may still be starting). */
  get running(): boolean {
    return this.owner !== null;
  }

  /**
   * Starts a process life: opens the log, brings the state in step with it (bootstrapping an empty
   * log with `bootstrap` voters), then starts the driver. Resolves once the driver runs; a crash meanwhile
   * leaves it pending forever, as the process is gone.
   */
  async start(options: {
    clock: VirtualClock;
    random: SeededRandom;
    tuning: DriverTuning;
    bootstrap: readonly NodeId[] | null;
    /** The cluster's voters as its configuration names them (the voter's `Cluster.Voters`). */
    voters: readonly NodeId[];
    post: (m: Message) => void;
    requests: SimRequestNetwork;
    /** What the command router sees of the peer requests (a test's broken transport). */
    forwards: (transport: ForwardTransport) => ForwardTransport;
    /** New members ask the leader to join, as voters do by default; null: an operator adds them. */
    joins: MemberJoinTuning | null;
    watch: NodeWatch;
    createCore: (options: RaftOptions) => RaftNode;
  }): Promise<void> {
    const { clock, random, tuning, watch } = options;
    this.life++;
    const owner = new TimerOwner(`${this.id}#${this.life}`, this.skew);
    this.owner = owner;
    const timers = clock.timersFor(owner);
    const fsyncTime = (): number =>
      tuning.fsyncDelay[0] + random.nextInt(tuning.fsyncDelay[1] - tuning.fsyncDelay[0] + 1);
    const simStore = new SimLogStore(this.logDisk, {
      schedule: (delay, callback) => timers.setTimeout(callback, delay),
      syncDelay: fsyncTime,
    });
    this.store = simStore;
    this.injected = null;
    const store = watched(simStore, watch);
    const writer = new DurableLogWriter(
      store,
      new SnapshotPolicy({
        entries: tuning.snapshotEntries,
        bytes: 1 << 30,
        retainEntries: tuning.retainEntries,
      }),
      (callback) => timers.setImmediate(callback),
    );
    this.writer = writer;
    const logger = traceLogger(this.id, watch);
    const state = new SimDriverState(
      this.stateDisk,
      this.logDisk,
      guarded(owner, watch),
      () => new Promise<void>((resolve) => timers.setTimeout(resolve, fsyncTime())),
      () => random.chance(0.5),
    );
    this.state = state;
    const { hardState, conf } = store.initialState();
    watch.opened(hardState);
    if (options.bootstrap !== null && store.lastIndex() === 0 && conf.voters.length === 0) {
      const boot = bootstrapState(options.bootstrap);
      await writer.write({ snapshot: null, entries: boot.entries, hardState: boot.hardState });
    }
    await recoverAtStart(writer, state, "sim:state", logger);
    if (!owner.alive) return;
    const transport = new SimTransport((m) => {
      if (!owner.alive) return;
      try {
        watch.sending(m, this.logDisk.durableLog);
      } catch (error) {
        watch.violation(error);
        throw error;
      }
      options.post(m);
    });
    this.transport = transport;
    const driver = new RaftDriver({
      id: this.id,
      voters: options.voters,
      store,
      writer,
      stateMachine: state,
      transport,
      random: new SeededRandom(random.nextUint32()),
      logger,
      electionTimeoutMs: tuning.electionTimeoutMs,
      heartbeatIntervalMs: tuning.heartbeatIntervalMs,
      maxUncommittedBytes: tuning.maxUncommittedBytes,
      followerApplyHoldMs: tuning.followerApplyHoldMs,
      snapshotChunkBytes: tuning.snapshotChunkBytes,
      timers,
      readIncarnation: `life${this.life}`,
      createCore: (o) => watchedCore(options.createCore(o), store, watch),
    });
    this.driver = driver;
    driver.start();
    const endpoint = options.requests.endpoint(this.id, memberName(this.id), this.life, timers);
    this.endpoint = endpoint;
    this.commands = new DriverCommandPath(
      driver,
      endpoint,
      options.forwards,
      timers,
      logger,
      tuning.commands,
    );
    if (options.joins !== null)
      this.joins = new DriverMemberJoin(driver, endpoint, timers, logger, options.joins);
  }

  /**
   * The voter's shutdown as far as Raft goes (voter.ts): the command scheduler stops taking work and
   * waits for its units, a leader hands its leadership to the most caught-up voter, then the driver
   * stops, failing what still waits, the peer network's end closes and the log's writer closes.
   * Harsher than the voter's: clients go on calling the driver itself throughout; and the state is not
   * closed, so a power loss after the exit may still lose its unsynced applies.
   */
  shutDown(): Promise<void> {
    const { driver, writer, commands, endpoint, joins } = this;
    if (driver === null || writer === null || commands === null || endpoint === null)
      return Promise.resolve();
    // Told to stop twice, a voter shuts down once.
    // Every step runs, as the voter's do, and the first failure is reported.
    this.stopping ??= (async () => {
      const failures: unknown[] = [];
      for (const step of [
        () => commands.scheduler.shutdown(),
        () => joins?.stop(),
        () => driver.transferLeadership(),
        () => driver.stop(),
        () => endpoint.close(),
        () => writer.close(),
      ]) {
        try {
          await step();
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length > 0) throw failures[0];
    })();
    return this.stopping;
  }

  /** Whether `error` is the storage fault injected into this life, or has it among its causes. */
  stoppedBy(error: unknown): boolean {
    const injected = this.injected;
    if (injected === null) return false;
    for (let e: unknown = error; e instanceof Error; e = e.cause) if (e === injected) return true;
    return false;
  }

  /**
   * The process dies: its timers never fire again and nothing it held in memory survives. A power
   * loss (`keepUnsynced` false) also loses what its disks had not synced.
   */
  crash(keepUnsynced: boolean): { stateBatchesLost: number } {
    if (this.owner !== null) this.owner.alive = false;
    this.owner = null;
    this.driver = null;
    this.state = null;
    this.store = null;
    this.writer = null;
    this.stopping = null;
    this.transport = null;
    this.endpoint?.close();
    this.endpoint = null;
    this.commands = null;
    this.joins = null;
    this.logDisk.crash(keepUnsynced);
    return { stateBatchesLost: this.stateDisk.crash() };
  }
}

/** The core, with every Ready shown to `watch` as it is handed out. */
function watchedCore(core: RaftNode, log: LogStore, watch: NodeWatch): RaftNode {
  const ready = core.ready.bind(core);
  core.ready = (): Ready => {
    const rd = ready();
    try {
      watch.ready(rd, core.status(), log);
    } catch (error) {
      watch.violation(error);
      throw error;
    }
    return rd;
  };
  return core;
}

/** The store, with every group commit shown to `watch` after it is made. */
function watched(store: SimLogStore, watch: NodeWatch): LogStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      if (key !== "commit") return Reflect.get(target, key, receiver);
      return (ops: readonly StoreOp[]): (Error | null)[] => {
        const results = target.commit(ops);
        try {
          watch.committed(ops, results, target);
        } catch (error) {
          watch.violation(error);
          throw error;
        }
        return results;
      };
    },
  });
}

/** The observer of a life's applies, silent once the life ended and reporting what it finds. */
function guarded(owner: TimerOwner, watch: NodeWatch): StateObserver {
  return {
    applied(entry: Entry, digest: number, chain: number) {
      if (!owner.alive) throw new Error(`${owner.name} applies ${entry.index} after it died`);
      try {
        watch.applied(entry, digest, chain);
      } catch (error) {
        watch.violation(error);
        throw error;
      }
    },
    restored(index: number, term: number, chain: number) {
      try {
        watch.restored(index, term, chain);
      } catch (error) {
        watch.violation(error);
        throw error;
      }
    },
  };
}

/** The driver's log lines go to the run's trace, as structured as the voter writes them. */
function traceLogger(id: NodeId, watch: NodeWatch): Logger {
  return pino(
    // An error as its name and message: a stack names the caller's lines, which would make the same
    // seed's trace differ between callers.
    { level: "info", base: { nodeId: id }, timestamp: false, serializers: { err: describeError } },
    { write: (line: string) => watch.log(line.trimEnd()) },
  );
}
