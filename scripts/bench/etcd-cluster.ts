/**
 * A three-member etcd cluster as child processes on loopback (Debian's `etcd-server`), each member
 * with its own data dir under `root` and etcd's defaults otherwise (fsync on every WAL write).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { $ } from "zx";
import { freePorts, ServerProcess, waitFor } from "./server-processes.js";

export interface EtcdMemberProcess {
  readonly name: string;
  readonly clientUrl: string;
  readonly process: ServerProcess;
}

export interface EtcdClusterOptions {
  readonly root: string;
  /** The etcd binary. */
  readonly binary?: string;
  readonly onSpawn?: (p: ServerProcess) => void;
}

interface StatusBody {
  readonly header?: { readonly member_id?: string };
  readonly leader?: string;
}

/** `etcd --version`'s first line, or null when etcd is not installed. */
export function etcdVersion(binary = "etcd"): string | null {
  const version = $({ sync: true, nothrow: true, quiet: true })`${binary} --version`;
  return version.ok ? version.stdout.split("\n")[0]!.trim() : null;
}

export class EtcdCluster {
  private constructor(readonly members: readonly EtcdMemberProcess[]) {}

  static async start(options: EtcdClusterOptions): Promise<EtcdCluster> {
    const ports = await freePorts(6);
    const peerPorts = ports.slice(0, 3);
    const clientPorts = ports.slice(3);
    const names = ["etcd1", "etcd2", "etcd3"];
    const initialCluster = names.map((n, i) => `${n}=http://127.0.0.1:${peerPorts[i]}`).join(",");
    const token = `keyload-bench-${randomBytes(6).toString("hex")}`;
    const members: EtcdMemberProcess[] = [];
    mkdirSync(options.root, { recursive: true });
    for (let i = 0; i < 3; i++) {
      const name = names[i]!;
      const clientUrl = `http://127.0.0.1:${clientPorts[i]}`;
      const peerUrl = `http://127.0.0.1:${peerPorts[i]}`;
      const process_ = ServerProcess.spawn({
        name,
        command: options.binary ?? "etcd",
        args: [
          `--name=${name}`,
          `--data-dir=${join(options.root, name)}`,
          `--listen-client-urls=${clientUrl}`,
          `--advertise-client-urls=${clientUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=${initialCluster}`,
          `--initial-cluster-token=${token}`,
          "--initial-cluster-state=new",
          "--logger=zap",
          "--log-level=warn",
        ],
        env: { ...process.env, ETCDCTL_API: "3" },
        logFile: join(options.root, `${name}.log`),
      });
      options.onSpawn?.(process_);
      members.push({ name, clientUrl, process: process_ });
    }
    return new EtcdCluster(members);
  }

  get pids(): number[] {
    return this.members.map((m) => m.process.pid);
  }

  /** Waits until every member answers `GET /health` with `"health":"true"` (it sees a leader). */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    await waitFor(
      "three healthy etcd members",
      timeoutMs,
      async () => {
        const healthy = await Promise.all(
          this.members.map(async (m) => {
            const response = await fetch(`${m.clientUrl}/health`, { signal: AbortSignal.timeout(2000) });
            const body = (await response.json()) as { health?: string };
            return response.status === 200 && body.health === "true";
          }),
        );
        return healthy.every(Boolean) ? true : undefined;
      },
      () => this.checkRunning(),
    );
  }

  /** The index of the member whose own ID is the leader's, by the `/v3/maintenance/status` gateway. */
  async leader(timeoutMs = 15_000): Promise<number> {
    return waitFor(
      "an etcd leader",
      timeoutMs,
      async () => {
        for (let i = 0; i < this.members.length; i++) {
          const response = await fetch(`${this.members[i]!.clientUrl}/v3/maintenance/status`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{}",
            signal: AbortSignal.timeout(2000),
          });
          const body = (await response.json()) as StatusBody;
          if (body.leader && body.leader !== "0" && body.header?.member_id === body.leader) return i;
        }
        return undefined;
      },
      () => this.checkRunning(),
    );
  }

  checkRunning(): void {
    for (const m of this.members) {
      if (!m.process.running) {
        throw new Error(`${m.process.name} ${m.process.describeExit()}:\n${m.process.logTail(5)}`);
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => m.process.stop()));
  }
}
