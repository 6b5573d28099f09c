import type { WaitStrategy } from "testcontainers";
import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { VoterHealthTimeoutError } from "./apphost-errors.js";
import { isLive, probeVoter } from "./voter-health.js";
import type { VoterHealthCheck } from "./voter-runtime.js";

type WaitedContainer = Parameters<WaitStrategy["waitUntilReady"]>[0];

async function isRunning(container: WaitedContainer): Promise<boolean> {
  try {
    return (await container.inspect()).State.Running;
  } catch {
    // Removed already: the engine removes a voter's container as soon as it exits.
    return false;
  }
}

/**
 * testcontainers' wait for a voter: until it answers 200 on `/health/ready` or `/health/live`.
 * testcontainers' own HTTP wait asks a mapped port, and a container on the host's network has none,
 * so the voter is asked at its own address. A voter that exits ends the wait without an error: its
 * exit, with its log, says why, as for a voter that exits while the cluster waits for it.
 */
export class VoterHealthWaitStrategy implements WaitStrategy {
  private startupTimeoutMs: number = APPHOST_DEFAULTS.readinessTimeoutMs;
  private startupTimeoutSet = false;

  constructor(
    private readonly voter: string,
    private readonly httpUrl: string,
    private readonly health: VoterHealthCheck,
  ) {}

  async waitUntilReady(container: WaitedContainer): Promise<void> {
    const deadline = Date.now() + this.startupTimeoutMs;
    for (;;) {
      if (await this.answers()) return;
      if (!(await isRunning(container))) return;
      if (Date.now() >= deadline) {
        throw new VoterHealthTimeoutError(
          this.voter,
          `${this.httpUrl}/health/${this.health}`,
          this.startupTimeoutMs,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, APPHOST_DEFAULTS.pollIntervalMs));
    }
  }

  withStartupTimeout(startupTimeoutMs: number): this {
    this.startupTimeoutMs = startupTimeoutMs;
    this.startupTimeoutSet = true;
    return this;
  }

  isStartupTimeoutSet(): boolean {
    return this.startupTimeoutSet;
  }

  getStartupTimeout(): number {
    return this.startupTimeoutMs;
  }

  private async answers(): Promise<boolean> {
    if (this.health === "live") return isLive(this.httpUrl, APPHOST_DEFAULTS.probeTimeoutMs);
    return (await probeVoter(this.httpUrl, APPHOST_DEFAULTS.probeTimeoutMs)).ready;
  }
}
