import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { clusterEnvs, httpUrlOf } from "../../../node/src/voter/testing/cluster-envs.js";
import { KeyLoadClient } from "../keyload-client.js";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The voter's own entry point (`keyload-node`), run from source the way the AppHost runs it. */
const VOTER_ENTRY = fileURLToPath(new URL("../../../node/src/main.ts", import.meta.url));
const TSX_LOADER = pathToFileURL(
  createRequire(new URL("../../../node/package.json", import.meta.url)).resolve("tsx"),
).href;

interface VoterProcess {
  readonly env: Readonly<Record<string, string>>;
  readonly httpUrl: string;
  child: ChildProcess | undefined;
  stderr: string;
}

/**
 * Three voters, each its own operating-system process on loopback, so a test can SIGKILL one: no
 * shutdown runs, no queued command is answered, its connections just break, as when a machine dies.
 * The in-process cluster can only stop a voter gracefully.
 */
export class VoterProcesses {
  private readonly voters: VoterProcess[] = [];
  private readonly probe: KeyLoadClient;

  private constructor(
    private readonly root: string,
    urls: readonly string[],
  ) {
    this.probe = new KeyLoadClient({ endpoints: urls, requestTimeoutMs: 1_000, connectTimeoutMs: 500 });
  }

  static async start(env: Readonly<Record<string, string>> = {}): Promise<VoterProcesses> {
    const root = mkdtempSync(join(tmpdir(), "keyload-client-voters-"));
    // Warnings go to stderr, which a failure to find a leader reports.
    const envs = await clusterEnvs(root, { env: { KeyLoad__Log__Level: "warn", ...env } });
    const cluster = new VoterProcesses(root, envs.map(httpUrlOf));
    for (const voterEnv of envs) {
      cluster.voters.push({ env: voterEnv, httpUrl: httpUrlOf(voterEnv), child: undefined, stderr: "" });
    }
    for (let i = 0; i < 3; i++) cluster.start(i);
    return cluster;
  }

  url(i: number): string {
    return this.voters[i]!.httpUrl;
  }

  /** The index of the voter that leads once every running voter is ready (knows a leader, caught up). */
  async waitForLeader(timeoutMs = 30_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const roles = await Promise.all(this.voters.map((v, i) => this.role(v, i)));
      const running = roles.filter((role) => role !== "killed");
      const leader = roles.indexOf("leader");
      if (leader >= 0 && running.every((role) => role === "leader" || role === "follower")) return leader;
      if (Date.now() > deadline) {
        const stderr = this.voters.map((v) => v.stderr).join("\n");
        throw new Error(`no leader with every voter ready in time (${roles.join(", ")})\n${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  start(i: number): void {
    const voter = this.voters[i]!;
    const child = spawn(process.execPath, ["--conditions=source", "--import", TSX_LOADER, VOTER_ENTRY], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? "", ...voter.env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      voter.stderr += chunk.toString("utf8");
    });
    voter.child = child;
  }

  /** SIGKILL: the voter dies at once, mid-request, and keeps only what it had already made durable. */
  async kill(i: number): Promise<void> {
    const child = this.voters[i]!.child;
    this.voters[i]!.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.voters.map((_, i) => this.kill(i)));
    await this.probe.close();
    rmSync(this.root, { recursive: true, force: true });
  }

  private async role(voter: VoterProcess, i: number): Promise<string> {
    if (voter.child === undefined) return "killed";
    try {
      const health = await this.probe.ready({ endpoint: this.url(i) });
      return typeof health.detail.role === "string" ? health.detail.role : "unknown";
    } catch {
      return "not ready";
    }
  }
}
