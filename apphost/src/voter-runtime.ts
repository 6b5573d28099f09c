import type { AppModel, VoterResource } from "./app-model.js";
import type { ProcessRecord } from "./process-table.js";
import type { RuntimeKind } from "./runtime-kind.js";

export interface VoterLaunch {
  readonly voter: VoterResource;
  /** The cluster's state dir, which holds the voter's data dir and log file. */
  readonly stateDir: string;
  /** Every `KeyLoad__*` variable the voter gets: the forwarded configuration and the AppHost's wiring. */
  readonly env: Readonly<Record<string, string>>;
  /** Tie the voter's life to this process (foreground clusters and tests); otherwise it is detached for good. */
  readonly supervised: boolean;
  /** A group id of its own, so iptables can tell this voter's packets from the others' (see network-partition.ts). */
  readonly gid?: number;
  /**
   * What `start` waits for, in a runtime that waits before it returns (testcontainers' wait strategy):
   * `ready` when the whole cluster starts together (its voters elect a leader, so each becomes ready),
   * `live` when one voter is (re)started (a lone voter among stopped ones never becomes ready). The
   * cluster checks the same itself afterwards, whatever the runtime.
   */
  readonly waitFor: { readonly health: VoterHealthCheck; readonly timeoutMs: number };
}

/** The voter's health route a wait polls until it answers 200: `/health/ready` or `/health/live`. */
export type VoterHealthCheck = "ready" | "live";

export interface VoterExit {
  readonly code: number | null;
  readonly signal: string | null;
  /** Why the voter could not be started at all. */
  readonly spawnError?: string;
}

/**
 * A started voter. Whatever the runtime, the voter is one process of this machine's process table
 * (a container shares the host's pid namespace), so the pid-based operations of process-table.ts —
 * SIGTERM and SIGKILL, SIGSTOP and SIGCONT, state — apply to both runtimes alike.
 */
export interface VoterProcess extends ProcessRecord {
  /** Where this run's lines start in the voter's log file. */
  readonly logOffset: number;
  /** Settles when the voter exits; never rejects. */
  readonly exited: Promise<VoterExit>;
}

/** How voters are started: as local processes or in containers. */
export interface VoterRuntime {
  readonly kind: RuntimeKind;
  start(launch: VoterLaunch): Promise<VoterProcess>;
  /** Removes whatever stopped voters of the cluster leave behind (containers); a no-op for processes. */
  removeLeftovers(model: AppModel): Promise<void>;
}

export function describeExit(exit: VoterExit): string {
  if (exit.spawnError !== undefined) return `could not be started: ${exit.spawnError}`;
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  if (exit.code === null) return "exited";
  return `exited with code ${exit.code}`;
}

/** The runtime of a kind, for the CLI and programs that start clusters. */
export async function voterRuntimeOf(kind: RuntimeKind): Promise<VoterRuntime> {
  // Loaded on demand: the process runtime never needs the container one, nor the other way round.
  if (kind === "container") return (await import("./container-runtime.js")).containerRuntime;
  return (await import("./process-runtime.js")).processRuntime;
}

/**
 * The runtime of a kind for the testing API. A test's containers belong to the test process alone, as
 * testcontainers' do; the CLI's may outlive the command that started them.
 */
export async function testRuntimeOf(kind: RuntimeKind): Promise<VoterRuntime> {
  if (kind === "container") return (await import("./testcontainers-runtime.js")).testcontainersRuntime;
  return voterRuntimeOf(kind);
}
