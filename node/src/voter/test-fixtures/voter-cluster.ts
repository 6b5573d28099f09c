import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { loadVoterConfig } from "../../config/voter-config.js";
import { type RunningVoter, startVoter } from "../voter.js";
import { ADMIN_KEY, type ClusterOptions, clusterEnvs } from "./cluster-envs.js";

export type { ClusterOptions };

/** Three voters in this process on loopback, each in its own temp data dir; `dispose` removes everything. */
export class VoterCluster {
  readonly voters: (RunningVoter | null)[] = [];
  readonly envs: Record<string, string>[] = [];
  private readonly root = mkdtempSync(join(tmpdir(), "keyload-voters-"));
  private logLines: ClusterOptions["logLines"];

  static async start(options: ClusterOptions = {}): Promise<VoterCluster> {
    const c = new VoterCluster();
    c.logLines = options.logLines;
    c.envs.push(...(await clusterEnvs(c.root, options)));
    try {
      for (let i = 0; i < 3; i++) c.voters.push(await c.startVoter(i));
    } catch (err) {
      await c.dispose();
      throw err;
    }
    return c;
  }

  /** The settings of three voters, none of them started: start each with `restart(i)`. */
  static async prepare(options: ClusterOptions = {}): Promise<VoterCluster> {
    const c = new VoterCluster();
    c.logLines = options.logLines;
    c.envs.push(...(await clusterEnvs(c.root, options)));
    c.voters.push(null, null, null);
    return c;
  }

  private startVoter(i: number): Promise<RunningVoter> {
    const config = loadVoterConfig({ env: this.envs[i]! });
    const take = this.logLines;
    if (take === undefined) return startVoter(config, pino({ level: "silent" }));
    return startVoter(
      config,
      pino({ level: "info", base: { nodeId: config.node.id } }, { write: (text: string) => take(i, text) }),
    );
  }

  voter(i: number): RunningVoter {
    const v = this.voters[i];
    if (!v) throw new Error(`voter${i + 1} is stopped`);
    return v;
  }

  /**
   * Waits until a leader is elected and every running voter knows it and holds the cluster's bootstrap
   * admin, whose key the tests send: a new cluster's leader proposes the admin once it leads. A
   * follower that holds committed entries back (FollowerApplyHoldMs) is made to apply them by a read
   * barrier, as a read through it would.
   */
  async waitForLeader(timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const i = this.voters.findIndex((v) => v?.driver.isLeader());
      const running = this.voters.filter((v): v is RunningVoter => v !== null);
      if (i >= 0 && running.every((v) => v.driver.status().leader !== null)) {
        const lacking = running.filter((v) => !v.hasBootstrapAdmin());
        if (lacking.length === 0) return i;
        if (this.voter(i).hasBootstrapAdmin()) {
          await Promise.allSettled(lacking.map(async (v) => v.driver.readBarrier()));
          continue;
        }
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error("no leader elected, or its bootstrap admin not applied everywhere, in time");
  }

  async stop(i: number): Promise<void> {
    const v = this.voters[i];
    this.voters[i] = null;
    await v?.shutdown();
  }

  async restart(i: number): Promise<void> {
    await this.stop(i);
    this.voters[i] = await this.startVoter(i);
  }

  /**
   * Voter `i` loses its data dir: stopped, emptied, and started again with `env` over its settings,
   * which ask for no bootstrap (a new member, `voterN~<token>`) unless `env` says otherwise.
   */
  async restartEmpty(i: number, env: Record<string, string> = {}): Promise<void> {
    await this.stop(i);
    rmSync(this.envs[i]!.KeyLoad__Node__DataDir!, { recursive: true, force: true });
    this.envs[i] = { ...this.envs[i]!, KeyLoad__Cluster__BootstrapId: "", ...env };
    this.voters[i] = await this.startVoter(i);
  }

  async dispose(): Promise<void> {
    await Promise.allSettled(this.voters.map((v) => v?.shutdown()));
    rmSync(this.root, { recursive: true, force: true });
  }
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

/** One JSON request with the admin key (or `key`). */
/**
 * A voter's `/metrics` text, read with the admin key; asked again while the voter answers 401, as one
 * just started may not have applied the admin key yet (`/metrics` checks keys against its own catalog).
 */
export async function metricsText(url: string, waitMs = 10_000): Promise<string> {
  const headers = { authorization: `Bearer ${ADMIN_KEY}` };
  const deadline = Date.now() + waitMs;
  for (;;) {
    const res = await fetch(`${url}/metrics`, { headers, signal: AbortSignal.timeout(15_000) });
    if (res.status === 200) return res.text();
    await res.body?.cancel();
    if (res.status !== 401 || Date.now() > deadline) throw new Error(`${url}/metrics answered ${res.status}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function call(
  url: string,
  method: string,
  path: string,
  options: { body?: unknown; commandId?: string; key?: string | null } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  const key = options.key === undefined ? ADMIN_KEY : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.commandId) headers["keyload-command-id"] = options.commandId;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
  }
  const res = await fetch(`${url}${path}`, {
    method,
    headers,
    signal: AbortSignal.timeout(15_000),
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    headers: res.headers,
  };
}

/**
 * Writes `key` through a voter that is alone in its cluster, once it leads and its bootstrap admin has
 * applied (waits up to 10 s).
 */
export async function writeThroughSingleVoter(voter: RunningVoter, key: string): Promise<HttpAnswer> {
  const deadline = Date.now() + 10_000;
  while (!(voter.driver.isLeader() && voter.hasBootstrapAdmin()) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  return call(voter.httpUrl, "PUT", `/v1/catalog/${key}`, { body: { value: 1 }, commandId: "c1" });
}
