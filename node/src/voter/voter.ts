import { randomInt } from "node:crypto";
import { join } from "node:path";
import pino, { type Logger } from "pino";
import { Registry } from "prom-client";
import { CommandAdmissionGovernor } from "../admission/command-admission-governor.js";
import { CommandScheduler } from "../admission/command-scheduler.js";
import { CommandStageMetrics } from "../admission/command-stages.js";
import { DiskFloor } from "../admission/disk-floor.js";
import { DiskWatcher, type FreeSpaceProbe } from "../admission/disk-watcher.js";
import { HttpAdmissionGovernor } from "../admission/http-admission-governor.js";
import { type HttpTlsFiles, readHttpTlsFiles } from "../config/http-tls-files.js";
import type { VoterConfig } from "../config/voter-config.js";
import { ensurePrivateDir } from "../fs/private-dir.js";
import { createHttpServer, type HttpServer } from "../http/http-server.js";
import { pickFreePort } from "../net/free-ports.js";
import { PeerTransport } from "../peer/peer-transport.js";
import { SeededRandom } from "../raft/seeded-random.js";
import { ApiKeyHasher } from "../state/api-key-hasher.js";
import { snapshotReserveBytes } from "../state/snapshot-reserve.js";
import { StateMachine } from "../state/state-machine.js";
import { DurableLogStore } from "../storage/durable-log-store.js";
import { DurableLogWriter } from "../storage/durable-log-writer.js";
import type { FaultHook } from "../storage/fault-hook.js";
import { SnapshotPolicy } from "../storage/snapshot-policy.js";
import { BootstrapAdminProposer } from "./bootstrap-admin.js";
import { CanonicalLimitsProposer } from "./canonical-limits-proposer.js";
import {
  type CommandResult,
  CommandRouter,
  FORWARD_CHANNEL,
  forwardHandler,
  type VoterCommand,
} from "./command-router.js";
import { lockDataDir } from "./data-dir-lock.js";
import { KeyLoadVoterService } from "./keyload-voter-service.js";
import { SYSTEM_LEADER_CLOCK } from "./leader-clock.js";
import { LeaderStamper } from "./leader-stamper.js";
import { MemberIdentity } from "./member-identity.js";
import { JOIN_CHANNEL, joinHandler } from "./member-join.js";
import { MemberJoiner } from "./member-joiner.js";
import { RaftDriver } from "./raft-driver.js";
import { recoverAtStart } from "./start-recovery.js";
import type { VoterFailedError } from "./voter-failed-error.js";
import { registerVoterMetrics } from "./voter-metrics.js";

export interface RunningVoter {
  readonly nodeId: string;
  /** The base URL it advertises to peers and clients (`KeyLoad:Node:HttpAdvertisedUrl` or derived). */
  readonly httpUrl: string;
  readonly peerAddress: string;
  readonly driver: RaftDriver;
  readonly logger: Logger;
  /**
   * Settles when the voter's storage or apply fails: it has stopped taking part in Raft for good and
   * answers `/health/live` false. Whoever runs it ends the process then (main.ts); `shutdown` still
   * releases what it holds. Never rejects, and stays pending while nothing fails.
   */
  readonly failed: Promise<VoterFailedError>;
  /**
   * Whether this voter's applied state holds the cluster's bootstrap admin; until then no API key,
   * the admin's included, authenticates here (see BootstrapAdminProposer).
   */
  hasBootstrapAdmin(): boolean;
  /** Graceful: stop accepting, answer queued commands, let the active unit finish, hand leadership over, close storage. */
  shutdown(): Promise<void>;
}

/** What a test may add to a voter's start; production passes none. */
export interface VoterFaults {
  /** Called by the Raft log's storage between its durable steps; throwing there stands for an I/O error. */
  readonly storage?: FaultHook;
  /** Stands for the data directory's filesystem when the disk floor measures its free space. */
  readonly freeSpace?: FreeSpaceProbe;
}

/**
 * The composition root: storage, the state machine, the Raft driver, the peer transport, both
 * admission governors, the command scheduler and the HTTP edge, wired and started in that order.
 */
export async function startVoter(
  config: VoterConfig,
  logger?: Logger,
  faults: VoterFaults = {},
): Promise<RunningVoter> {
  const log = logger ?? pino({ level: config.log.level, base: { nodeId: config.node.id } });
  for (const { key, source, message } of config.deprecations)
    log.warn({ setting: key, source }, `${key} ${message}`);
  // Unusable TLS files stop the start before anything is opened or created.
  const tls = readHttpTlsFiles(config.tls);
  ensurePrivateDir(config.node.dataDir, log);
  ensurePrivateDir(join(config.node.dataDir, "raft"), log);
  ensurePrivateDir(join(config.node.dataDir, "state"), log);
  // What a start that fails part way has opened is closed again, newest first: otherwise, in a process
  // that goes on (an embedding application, a test), its Raft driver would keep campaigning on a
  // directory no one can lock again, and its ports would stay taken.
  const unlock = lockDataDir(config.node.dataDir);
  const opened: (() => unknown)[] = [unlock];
  try {
    return await wireVoter(config, log, tls, unlock, opened, faults);
  } catch (err) {
    // The start's own error is the one to report.
    await runEach(opened.reverse());
    throw err;
  }
}

/** Everything of startVoter after the lock; whatever it opens goes into `opened` as it goes. */
async function wireVoter(
  config: VoterConfig,
  log: Logger,
  tls: HttpTlsFiles | null,
  unlock: () => void,
  opened: (() => unknown)[],
  faults: VoterFaults,
): Promise<RunningVoter> {
  const { node, cluster, raft } = config;
  const voters = cluster.voters.map((v) => v.id);
  // Where each of the log's fsyncs runs is the driver's choice (FollowerApplyPolicy.fsyncSite). A new log
  // holds no configuration: a bootstrap writes it as the first entry, or the cluster sends it.
  const raftDir = join(node.dataDir, "raft");
  const store = DurableLogStore.open(raftDir, {
    conf: { voters: [] },
    sqlite: config.storage.log,
    ...(faults.storage === undefined ? {} : { faultHook: faults.storage }),
  });
  opened.push(() => store.close());
  const identity = await MemberIdentity.open(
    raftDir,
    node.id,
    store,
    cluster.bootstrapId === "" ? null : { clusterId: cluster.bootstrapId, voters },
    log,
  );
  const writer = new DurableLogWriter(
    store,
    new SnapshotPolicy({
      entries: raft.snapshotIntervalEntries,
      bytes: raft.snapshotIntervalBytes,
      retainEntries: Math.min(5000, raft.snapshotIntervalEntries),
    }),
  );
  const statePath = join(node.dataDir, "state", "state.sqlite");
  const keyHasher = new ApiKeyHasher(config.cluster.secret);
  const stateMachine = StateMachine.open({
    path: statePath,
    keyHasher,
    limits: config.canonical,
    sqlite: config.storage,
    ...(faults.storage === undefined ? {} : { faultHook: faults.storage }),
  });
  opened.push(() => stateMachine.close());
  await recoverAtStart(writer, stateMachine, statePath, log);

  const httpPort = node.httpPort === 0 ? await pickFreePort(node.httpHost) : node.httpPort;
  const httpUrl =
    node.httpAdvertisedUrl || `${tls === null ? "http" : "https"}://${urlHost(node.httpHost)}:${httpPort}`;
  const transport = new PeerTransport({
    nodeId: node.id,
    host: node.peerHost,
    port: node.peerPort,
    voters: cluster.voters,
    secret: cluster.secret,
    httpUrl,
    canonicalLimits: { ...config.canonical },
    clusterId: identity,
    incarnations: identity,
    logger: log,
    maxHandshakes: config.connections.maxPeerHandshakes,
    maxHandshakesPerSource: config.connections.maxPeerHandshakesPerSource,
    handshakeTimeoutMs: config.connections.peerHandshakeTimeoutMs,
  });
  const driver = new RaftDriver({
    id: identity.memberId,
    voters,
    store,
    writer,
    stateMachine,
    failureSources: [identity],
    transport,
    random: new SeededRandom(randomInt(2 ** 31)),
    logger: log.child({ component: "raft" }),
    electionTimeoutMs: raft.electionTimeoutMs,
    heartbeatIntervalMs: raft.heartbeatIntervalMs,
    maxUncommittedBytes: raft.maxUncommittedBytes,
    followerApplyHoldMs: raft.followerApplyHoldMs,
    snapshotChunkBytes: raft.snapshotChunkBytes,
  });
  // The voter's own commands are stamped as its clients' are (CommandRouter's own stamper).
  const stamper = new LeaderStamper(driver, transport, SYSTEM_LEADER_CLOCK);
  const bootstrapAdmin = new BootstrapAdminProposer({
    stamper,
    driver,
    stateMachine,
    adminKeyHash: keyHasher.hash(config.bootstrap.adminKey),
    logger: log.child({ component: "bootstrap-admin" }),
    checkIntervalMs: raft.heartbeatIntervalMs,
    proposeTimeoutMs: raft.replicationDeadlineMs,
  });
  const canonicalLimits = new CanonicalLimitsProposer({
    stamper,
    driver,
    stateMachine,
    logger: log.child({ component: "canonical-limits" }),
    checkIntervalMs: raft.heartbeatIntervalMs,
    proposeTimeoutMs: raft.replicationDeadlineMs,
  });
  const diskFloor = new DiskFloor(config.disk);
  const diskWatcher = new DiskWatcher({
    dir: node.dataDir,
    floor: diskFloor,
    reserveBytes: () => snapshotReserveBytes(statePath),
    ...(faults.freeSpace === undefined ? {} : { freeSpace: faults.freeSpace }),
    logger: log.child({ component: "disk" }),
  });
  const commandGovernor = new CommandAdmissionGovernor(config.commandAdmission, diskFloor);
  const httpGovernor = new HttpAdmissionGovernor(config.httpAdmission);
  const router = new CommandRouter({
    driver,
    transport,
    logger: log.child({ component: "router" }),
    forwardTimeoutMs: raft.replicationDeadlineMs,
    // Half the deadline at most: the command scheduler's deadline answers UnknownWriteOutcome, which must
    // not overtake the Unavailable of a unit that found no leader and so submitted nothing.
    leaderWaitMs: Math.min(Math.floor(raft.replicationDeadlineMs / 2), 3 * raft.electionTimeoutMs),
  });
  const metricsRegistry = new Registry();
  const commandStages = new CommandStageMetrics(metricsRegistry);
  const scheduler = new CommandScheduler<VoterCommand, CommandResult>(router, {
    maxConsecutiveControl: config.commandAdmission.MaxConsecutiveControl,
    replicationDeadlineMs: raft.replicationDeadlineMs,
    stages: commandStages,
  });
  const rejections = registerVoterMetrics(metricsRegistry, {
    driver,
    stateMachine,
    commandGovernor,
    diskFloor,
    transport,
    store,
  });
  transport.handle(FORWARD_CHANNEL, forwardHandler(commandGovernor, scheduler, driver, rejections));
  const service = new KeyLoadVoterService({
    nodeId: node.id,
    httpUrl,
    driver,
    stateMachine,
    keyHasher,
    transport,
    commandGovernor,
    httpGovernor,
    diskFloor,
    storageLimits: config.storage,
    scheduler,
    metricsRegistry,
    commandStages,
    rejections,
    readyLagEntries: raft.readyLagEntries,
    replicationDeadlineMs: raft.replicationDeadlineMs,
  });
  // `manual` on the leader too: no member is added or removed but by an admin.
  if (cluster.newMemberJoin === "automatic") {
    transport.handle(JOIN_CHANNEL, joinHandler(service.membership, log.child({ component: "membership" })));
  }
  const joiner = new MemberJoiner({
    driver,
    transport,
    peers: cluster.voters.map((v) => v.id).filter((id) => id !== node.id),
    logger: log.child({ component: "member-join" }),
    intervalMs: raft.electionTimeoutMs,
    // A join step may remove the old member and add the new one, each within the deadline.
    requestTimeoutMs: 2 * raft.replicationDeadlineMs + raft.electionTimeoutMs,
  });
  const http: HttpServer = createHttpServer({
    service,
    httpAdmission: httpGovernor,
    logger: log,
    limits: {
      maxConnections: config.connections.maxHttp,
      slowRequestMs: config.log.slowRequestMs,
      notableRequestLinesPerSecond: config.log.notableRequestLinesPerSecond,
    },
    ...(tls === null ? {} : { tls }),
  });

  opened.push(() => diskWatcher.stop());
  await diskWatcher.start();
  opened.push(() => transport.close());
  await transport.start();
  opened.push(() => driver.stop());
  driver.start();
  opened.push(() => bootstrapAdmin.stop());
  bootstrapAdmin.start();
  opened.push(() => canonicalLimits.stop());
  canonicalLimits.start();
  if (cluster.newMemberJoin === "automatic") {
    opened.push(() => joiner.stop());
    joiner.start();
  }
  await http.listen(node.httpHost, httpPort);
  log.info(
    { httpUrl, http: `${node.httpHost}:${httpPort}`, peer: `${node.peerHost}:${node.peerPort}`, voters },
    "voter started",
  );

  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      log.info("shutting down");
      const closingHttp = http.close();
      // Awaited after the steps before it; a failure meanwhile must not count as unhandled.
      closingHttp.catch(() => undefined);
      // A storage that failed to close must not keep the state database open or the data directory
      // locked: every step runs, and the first failure is reported.
      const failures = await runEach([
        () => scheduler.shutdown(),
        () => bootstrapAdmin.stop(),
        () => canonicalLimits.stop(),
        () => joiner.stop(),
        () => diskWatcher.stop(),
        async () => {
          if (await driver.transferLeadership()) log.info("leadership transferred before shutdown");
        },
        () => closingHttp,
        () => driver.stop(),
        () => transport.close(),
        () => writer.close(),
        () => stateMachine.close(),
        unlock,
      ]);
      if (failures.length > 0) {
        // The caller gets the first; the others would be lost.
        for (const err of failures.slice(1)) log.error({ err }, "a later shutdown step failed too");
        throw failures[0];
      }
      log.info("voter stopped");
    })();
    return stopping;
  };

  return {
    nodeId: node.id,
    httpUrl,
    peerAddress: `${node.peerHost}:${node.peerPort}`,
    driver,
    logger: log,
    failed: driver.failed,
    hasBootstrapAdmin: () => stateMachine.hasBootstrapAdmin(),
    shutdown,
  };
}

/** Runs each step in order, whether or not the ones before it failed; returns the failures. */
async function runEach(steps: readonly (() => unknown)[]): Promise<unknown[]> {
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failures.push(err);
    }
  }
  return failures;
}

function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
