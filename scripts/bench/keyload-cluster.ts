/**
 * Three KeyLoad voters as child processes on loopback, each with its own data dir under `root`. By
 * default each runs `node/dist/main.js` on plain Node, as the AppHost runs a voter (transpiled first by
 * `buildVoter`); `fromSource` runs `node/src/main.ts` through tsx instead.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { transpilePackage } from "@keyload/node/build";
import { freePorts, ServerProcess, waitFor } from "./server-processes.js";

/** The workspace's `node/` package, where tsx resolves from. */
export const NODE_PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "node");

/**
 * Transpiles the voter and the contract to their `dist` as the AppHost does before it starts voters
 * (`@keyload/node/build`), so that a benchmark never runs a stale `dist`.
 */
export async function buildVoter(): Promise<void> {
  await transpilePackage(join(NODE_PACKAGE_DIR, "..", "contract"));
  await transpilePackage(NODE_PACKAGE_DIR);
}

export interface KeyLoadVoterProcess {
  readonly id: string;
  readonly httpUrl: string;
  readonly process: ServerProcess;
}

export interface KeyLoadClusterOptions {
  readonly root: string;
  /** Extra `KeyLoad__...` variables for every voter. */
  readonly env?: Record<string, string>;
  /** Extra node flags (for example `--cpu-prof`). */
  readonly nodeFlags?: readonly string[];
  /** Runs `src/main.ts` through tsx rather than the compiled `dist/main.js`. */
  readonly fromSource?: boolean;
  /** Told of every process as soon as it is spawned, so that a caller can stop it whatever happens next. */
  readonly onSpawn?: (p: ServerProcess) => void;
}

interface HealthBody {
  readonly ready?: boolean;
  readonly detail?: { readonly role?: string; readonly leader?: string | null; readonly nodeId?: string };
}

export class KeyLoadCluster {
  readonly adminKey = `bench-admin-${randomBytes(12).toString("hex")}`;

  private constructor(readonly voters: readonly KeyLoadVoterProcess[]) {}

  static async start(options: KeyLoadClusterOptions): Promise<KeyLoadCluster> {
    const ports = await freePorts(6);
    const peerPorts = ports.slice(0, 3);
    const httpPorts = ports.slice(3);
    const voterList = peerPorts.map((p, i) => `voter${i + 1}@127.0.0.1:${p}`).join(",");
    const secret = `bench-secret-${randomBytes(12).toString("hex")}`;
    const voters: KeyLoadVoterProcess[] = [];
    const cluster = new KeyLoadCluster(voters);
    for (let i = 0; i < 3; i++) {
      const id = `voter${i + 1}`;
      const dataDir = join(options.root, id);
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      const process_ = ServerProcess.spawn({
        name: `keyload ${id}`,
        command: process.execPath,
        args: [
          ...(options.nodeFlags ?? []),
          ...(options.fromSource
            ? ["--conditions=source", "--import", "tsx", "src/main.ts"]
            : ["dist/main.js"]),
        ],
        cwd: NODE_PACKAGE_DIR,
        env: {
          ...process.env,
          KeyLoad__Node__Id: id,
          KeyLoad__Node__DataDir: dataDir,
          KeyLoad__Node__HttpPort: String(httpPorts[i]),
          KeyLoad__Node__PeerPort: String(peerPorts[i]),
          KeyLoad__Cluster__Voters: voterList,
          KeyLoad__Cluster__Secret: secret,
          // A benchmark's cluster is always new.
          KeyLoad__Cluster__BootstrapId: "bench",
          KeyLoad__Bootstrap__AdminKey: cluster.adminKey,
          KeyLoad__Log__Level: "warn",
          ...options.env,
        },
        logFile: join(options.root, `${id}.log`),
      });
      options.onSpawn?.(process_);
      voters.push({ id, httpUrl: `http://127.0.0.1:${httpPorts[i]}`, process: process_ });
    }
    return cluster;
  }

  get pids(): number[] {
    return this.voters.map((v) => v.process.pid);
  }

  /** Waits until every voter answers `GET /health/ready` with 200. */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    await waitFor(
      "three ready KeyLoad voters",
      timeoutMs,
      async () => {
        const bodies = await Promise.all(this.voters.map((v) => readiness(v.httpUrl)));
        return bodies.every((b) => b !== undefined) ? true : undefined;
      },
      () => this.checkRunning(),
    );
  }

  /** The index of the voter whose readiness says `role: "leader"`. */
  async leader(timeoutMs = 15_000): Promise<number> {
    return waitFor(
      "a KeyLoad leader",
      timeoutMs,
      async () => {
        for (let i = 0; i < this.voters.length; i++) {
          const body = await readiness(this.voters[i]!.httpUrl).catch(() => undefined);
          if (body?.detail?.role === "leader") return i;
        }
        return undefined;
      },
      () => this.checkRunning(),
    );
  }

  checkRunning(): void {
    for (const v of this.voters) {
      if (!v.process.running) {
        throw new Error(`${v.process.name} ${v.process.describeExit()}:\n${v.process.logTail(5)}`);
      }
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.voters.map((v) => v.process.stop()));
  }
}

async function readiness(httpUrl: string): Promise<HealthBody | undefined> {
  const response = await fetch(`${httpUrl}/health/ready`, { signal: AbortSignal.timeout(2000) });
  const body = (await response.json()) as HealthBody;
  return response.status === 200 ? body : undefined;
}
