import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CreateKeyResult, KeyLoadClient, type KeyLoadClientOptions, type Role } from "@keyload/client";
import { httpUrlOf, peerAddressOf, VOTER_NAMES, type VoterName } from "../app-model.js";
import type { AppHostCluster } from "../apphost-cluster.js";
import { APPHOST_DEFAULTS } from "../apphost-defaults.js";
import {
  PortInUseError,
  ReadinessTimeoutError,
  VoterStartError,
  VoterStateError,
} from "../apphost-errors.js";
import { majorityLeader } from "../cluster-leader.js";
import { probeCluster, waitForClusterReady } from "../cluster-readiness.js";
import { prepareCluster } from "../cluster-setup.js";
import type { VoterState } from "../cluster-status.js";
import { type Dashboard, serveDashboard } from "../dashboard-server.js";
import { dashboardSourceOf } from "../dashboard-source.js";
import { processState, signalProcess } from "../process-table.js";
import type { RuntimeKind } from "../runtime-kind.js";
import type { VoterFailure } from "../voter-failure.js";
import { VOTER_GIDS } from "../voter-groups.js";
import { readFrom } from "../voter-log-file.js";
import { testRuntimeOf } from "../voter-runtime.js";
import { ClusterDisposedError } from "./cluster-disposed-error.js";
import { linksBetween, NetworkPartition, type VoterLink } from "./network-partition.js";

export interface StartClusterOptions {
  /** `KeyLoad__Section__Property` settings for every voter. */
  readonly env?: Readonly<Record<string, string>>;
  /** Settings for one voter, over the shared ones: `{ voter2: { KeyLoad__HttpAdmission__MaxRequests: "4" } }`. */
  readonly voterEnv?: Readonly<Partial<Record<VoterName, Readonly<Record<string, string>>>>>;
  /** How long to wait for every voter to be ready and one leader to be elected. */
  readonly readyTimeoutMs?: number;
  /** Processes (the default) or containers of a local Docker engine. */
  readonly runtime?: RuntimeKind;
}

/**
 * One voter of a test cluster. `pid` is that of its current process, null while it is stopped; `state`
 * and `failure` are what `status` shows for it now.
 */
export interface TestVoter {
  readonly name: VoterName;
  readonly pid: number | null;
  /** `failed` once it ended on its own with a non-zero status (fail-stop), until it is started again. */
  readonly state: VoterState;
  /** How it failed, with its last log lines; null unless `state` is `failed`. */
  readonly failure: VoterFailure | null;
  readonly httpUrl: string;
  readonly peerAddress: string;
  readonly dataDir: string;
  readonly logFile: string;
}

export interface TenantOptions {
  readonly tenantId?: string;
  readonly principalId?: string;
  readonly roles?: readonly Role[];
  /** How many API keys to create for the principal; at least one is. */
  readonly keys?: number;
}

/** An API key of a tenant fixture, with its plain text. */
export type ShownKey = CreateKeyResult & { readonly apiKey: string };

export interface TenantFixture {
  readonly tenantId: string;
  readonly principalId: string;
  readonly roles: readonly Role[];
  readonly keys: readonly ShownKey[];
  /** The first key's plain text. */
  readonly apiKey: string;
}

export interface WaitForLeaderOptions {
  readonly timeoutMs?: number;
  /** Voters that do not count, e.g. a leader just isolated that has not noticed yet. */
  readonly excluding?: readonly VoterName[];
}

/** How many times startCluster picks new ports when another process took one of them meanwhile. */
const PORT_ATTEMPTS = 3;
const live = new Set<TestCluster>();

// A test process that ends without dispose (a crash, a forgotten afterEach) still removes its temp
// dirs; its voters follow it on their own (supervision.ts).
process.once("exit", () => {
  for (const cluster of live) cluster.disposeNow();
});

function isPortClash(err: unknown): boolean {
  return (
    err instanceof PortInUseError ||
    (err instanceof VoterStartError && err.lastLines.some((line) => line.includes("EADDRINUSE")))
  );
}

/**
 * A running three-voter cluster for a test: real voter processes on free loopback ports, in a temp state
 * dir, with the fault helpers a test of a replicated store needs. The analogue of Aspire.Hosting.Testing's
 * DistributedApplicationTestingBuilder. Always `dispose()` it (afterEach); it leaves nothing behind.
 */
export class TestCluster {
  readonly stateDir: string;
  private readonly partitionRules = new NetworkPartition();
  private readonly clients: KeyLoadClient[] = [];
  private readonly dashboards: Dashboard[] = [];
  private disposed = false;
  private retainedLogs: Readonly<Record<VoterName, string>> | undefined;

  private constructor(
    private readonly cluster: AppHostCluster,
    stateDir: string,
  ) {
    this.stateDir = stateDir;
  }

  /** Starts a cluster and waits until it is ready, with a leader. */
  static async start(options: StartClusterOptions = {}): Promise<TestCluster> {
    const variables = [
      ...Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value })),
      ...Object.entries(options.voterEnv ?? {}).flatMap(([voter, env]) =>
        Object.entries(env ?? {}).map(([name, value]) => ({
          name: `AppHost__Voters__${voter}__${name}`,
          value,
        })),
      ),
    ];
    for (let attempt = 1; ; attempt++) {
      const stateDir = mkdtempSync(join(tmpdir(), "keyload-apphost-"));
      let prepared: Awaited<ReturnType<typeof prepareCluster>>;
      try {
        prepared = await prepareCluster({
          stateDir,
          isolated: true,
          fresh: false,
          variables,
          supervised: true,
          runtime: await testRuntimeOf(options.runtime ?? APPHOST_DEFAULTS.runtime),
        });
      } catch (err) {
        rmSync(stateDir, { recursive: true, force: true });
        throw err;
      }
      const test = new TestCluster(prepared.cluster, stateDir);
      live.add(test);
      try {
        const snapshot = await prepared.cluster.up({
          timeoutMs: options.readyTimeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs,
        });
        // A refusal disposes of the cluster below, so its voters are reported stopped.
        await prepared.confirmAdminKey(snapshot, false);
        return test;
      } catch (err) {
        await test.dispose();
        if (attempt < PORT_ATTEMPTS && isPortClash(err)) continue;
        throw err;
      }
    }
  }

  get adminKey(): string {
    return this.cluster.adminKey;
  }

  get adminKeyFile(): string {
    return this.cluster.model.adminKeyFile;
  }

  get voters(): readonly TestVoter[] {
    return VOTER_NAMES.map((name) => this.voter(name));
  }

  voter(name: VoterName): TestVoter {
    const resource = this.cluster.voter(name);
    const cluster = this.cluster;
    return {
      name,
      get pid() {
        const record = cluster.process(name);
        return processState(record) === "stopped" ? null : (record?.pid ?? null);
      },
      get state() {
        const current = processState(cluster.process(name));
        return current === "stopped" && cluster.failure(name) !== null ? "failed" : current;
      },
      get failure() {
        return processState(cluster.process(name)) === "stopped" ? cluster.failure(name) : null;
      },
      httpUrl: httpUrlOf(resource),
      peerAddress: peerAddressOf(resource),
      dataDir: resource.dataDir,
      logFile: resource.logFile,
    };
  }

  /**
   * The leader a majority of the voters follow, with the highest term if two voters claim leadership
   * (an isolated old leader keeps claiming until it notices); undefined when there is none.
   */
  async leader(options: Pick<WaitForLeaderOptions, "excluding"> = {}): Promise<TestVoter | undefined> {
    const snapshot = await probeCluster(
      this.voters.map((v) => ({ name: v.name, httpUrl: v.httpUrl })),
      Date.now(),
    );
    const leader = majorityLeader(snapshot.voters, options.excluding);
    return leader === undefined ? undefined : this.voter(leader as VoterName);
  }

  async waitForLeader(options: WaitForLeaderOptions = {}): Promise<TestVoter> {
    const timeoutMs = options.timeoutMs ?? APPHOST_DEFAULTS.readinessTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const leader = await this.leader(options);
      if (leader) return leader;
      if (Date.now() >= deadline) throw new ReadinessTimeoutError(timeoutMs, "no leader was elected");
      await new Promise((resolve) => setTimeout(resolve, APPHOST_DEFAULTS.pollIntervalMs));
    }
  }

  /** Waits until every voter is ready and follows one leader, as after start. */
  async waitForReady(timeoutMs: number = APPHOST_DEFAULTS.readinessTimeoutMs): Promise<void> {
    await waitForClusterReady(
      this.voters.map((v) => ({ name: v.name, httpUrl: v.httpUrl })),
      { timeoutMs },
    );
  }

  /**
   * A client of all three voters; without a key it can reach only the health routes.
   * `options` tunes it (timeouts, retries); dispose closes it.
   */
  client(apiKey?: string, options: Omit<KeyLoadClientOptions, "endpoints" | "apiKey"> = {}): KeyLoadClient {
    const client = new KeyLoadClient({
      ...options,
      endpoints: this.voters.map((v) => v.httpUrl),
      ...(apiKey === undefined ? {} : { apiKey }),
    });
    this.clients.push(client);
    return client;
  }

  /** A client with the bootstrap admin key (principal `admin` of tenant `system`). */
  adminClient(): KeyLoadClient {
    return this.client(this.adminKey);
  }

  /** Creates a principal of a tenant through the admin routes, and API keys for it. */
  async createTenant(options: TenantOptions = {}): Promise<TenantFixture> {
    const suffix = randomBytes(4).toString("hex");
    const tenantId = options.tenantId ?? `tenant-${suffix}`;
    const principalId = options.principalId ?? `principal-${suffix}`;
    const roles = options.roles ?? ["writer", "reader"];
    const admin = this.adminClient();
    await admin.putPrincipal({ principalId, tenantId, roles });
    const keys: ShownKey[] = [];
    for (let i = 0; i < (options.keys ?? 1); i++) keys.push(await this.shownKey(admin, principalId));
    return { tenantId, principalId, roles, keys, apiKey: keys[0]!.apiKey };
  }

  /**
   * A new key with its plain text. A retry inside the client whose first attempt had made the key
   * answers without it; no one holds that key, so it is deleted and another made.
   */
  private async shownKey(admin: KeyLoadClient, principalId: string): Promise<ShownKey> {
    for (;;) {
      const key = await admin.createKey(principalId);
      if (key.apiKey !== undefined) return { ...key, apiKey: key.apiKey };
      await admin.deleteKey(principalId, key.keyId);
    }
  }

  /**
   * Throws ClusterDisposedError once dispose has begun. Every fault and lifecycle method checks first:
   * a test body still running after its timeout (dispose runs in afterEach) would otherwise respawn
   * voters, signal reused pids or add iptables rules that nothing removes.
   */
  private assertLive(action: string): void {
    if (this.disposed) throw new ClusterDisposedError(action);
  }

  async kill(name: VoterName): Promise<string> {
    this.assertLive(`kill ${name}`);
    return this.cluster.kill(name);
  }

  async stop(name: VoterName): Promise<string> {
    this.assertLive(`stop ${name}`);
    return this.cluster.stop(name);
  }

  /** Starts a stopped voter and waits until it answers HTTP (not until it has caught up). */
  async start(name: VoterName): Promise<string> {
    this.assertLive(`start ${name}`);
    return this.cluster.start(name);
  }

  async restart(name: VoterName): Promise<string> {
    this.assertLive(`restart ${name}`);
    return this.cluster.restart(name);
  }

  pause(name: VoterName): string {
    this.assertLive(`pause ${name}`);
    return this.cluster.pause(name);
  }

  resume(name: VoterName): string {
    this.assertLive(`resume ${name}`);
    return this.cluster.resume(name);
  }

  /**
   * Deletes a stopped voter's data dir, as if its disk were lost. Started again, the voter is a new
   * member that the cluster has not added: it votes for nothing and serves nothing until `replace`.
   */
  wipe(name: VoterName): void {
    this.assertLive(`wipe ${name}`);
    if (processState(this.cluster.process(name)) !== "stopped") {
      throw new VoterStateError(`${name} must be stopped before its data dir is wiped`);
    }
    rmSync(this.cluster.voter(name).dataDir, { recursive: true, force: true });
  }

  /**
   * What `pnpm apphost replace` does: removes the voter's member from the configuration, empties its
   * data dir, starts it as a new member, adds that as a learner and promotes it once caught up. Needs
   * the other two voters ready.
   */
  async replace(name: VoterName): Promise<string> {
    this.assertLive(`replace ${name}`);
    return this.cluster.replace(name);
  }

  /**
   * Cuts the peer traffic between the groups, both ways, e.g. `[["voter1"], ["voter2", "voter3"]]`; a
   * voter named in no group is cut off alone. Replaces any partition or cut in place. Needs root and
   * iptables: otherwise PartitionUnavailableError says which.
   */
  async partition(groups: readonly (readonly VoterName[])[]): Promise<void> {
    this.assertLive("partition");
    return this.cut(linksBetween(groups));
  }

  /**
   * Cuts links one way: `[["voter1", "voter2"]]` drops what voter1 sends voter2 (its Raft messages and
   * forwarded commands) while voter2 still reaches voter1. Replaces any partition or cut in place; an
   * empty list cuts nothing. Needs root and iptables, like `partition`.
   */
  async cut(links: readonly VoterLink[]): Promise<void> {
    this.assertLive("cut");
    return this.partitionRules.apply(
      links,
      VOTER_NAMES.map((name) => ({
        name,
        peerPort: this.cluster.voter(name).peerPort,
        gid: VOTER_GIDS[name],
      })),
    );
  }

  /** Dispose heals as it begins, so a heal after that has nothing to do and refuses like the rest. */
  async heal(): Promise<void> {
    this.assertLive("heal");
    return this.partitionRules.heal();
  }

  /**
   * Everything the voter has logged in this cluster, JSON lines as written. Still answers after
   * dispose, which runs before a test framework reports the failure the logs explain.
   */
  logs(name: VoterName): string {
    return this.retainedLogs?.[name] ?? readFrom(this.cluster.voter(name).logFile, 0).text;
  }

  /**
   * Serves the AppHost's dashboard for this cluster, as `up` does, on a free loopback port; its actions
   * act on this cluster. Close it, or dispose does.
   */
  async dashboard(): Promise<Dashboard> {
    this.assertLive("dashboard");
    const dashboard = await serveDashboard(
      dashboardSourceOf(this.cluster.model, async () => this.cluster),
      { port: 0 },
    );
    this.dashboards.push(dashboard);
    return dashboard;
  }

  /**
   * Heals any partition, kills the voters, closes the clients and removes the state dir. Idempotent.
   * From its start on, the fault and lifecycle methods throw ClusterDisposedError.
   */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    try {
      await Promise.allSettled(this.dashboards.splice(0).map((d) => d.close()));
      await this.partitionRules.heal();
    } finally {
      try {
        await this.cluster.killAll();
        await Promise.all(this.clients.splice(0).map((c) => c.close()));
      } finally {
        live.delete(this);
        this.retainedLogs = Object.fromEntries(
          VOTER_NAMES.map((name) => [name, readFrom(this.cluster.voter(name).logFile, 0).text]),
        ) as Record<VoterName, string>;
        rmSync(this.stateDir, { recursive: true, force: true });
      }
    }
  }

  /** What dispose does, synchronously, for a process that is exiting. */
  disposeNow(): void {
    this.disposed = true;
    this.partitionRules.healNow();
    for (const name of VOTER_NAMES) {
      const record = this.cluster.process(name);
      if (record) signalProcess(record, "SIGKILL");
    }
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

/** Starts a three-voter cluster for a test; see TestCluster. */
export function startCluster(options: StartClusterOptions = {}): Promise<TestCluster> {
  return TestCluster.start(options);
}
