import { constants } from "node:os";
import type Database from "better-sqlite3";
import pino from "pino";
import { vi } from "vitest";
import { loadVoterConfig } from "../../config/voter-config.js";
import type { Message } from "../../raft/types.js";
import type { StateMachine } from "../../state/state-machine.js";
import type { FaultHook, StorageFaultPoint } from "../../storage/fault-hook.js";
import type { RaftDriver } from "../raft-driver.js";
import { type RunningVoter, startVoter, type VoterFaults } from "../voter.js";
import { driverParts } from "./cluster-per-test.js";
import type { VoterCluster } from "./voter-cluster.js";

export type IoErrorCode = "ENOSPC" | "EIO";

const DESCRIPTIONS: Record<IoErrorCode, string> = {
  ENOSPC: "no space left on device",
  EIO: "i/o error",
};

/** The error Node's fs raises when `syscall` fails with `code`. */
export function ioError(code: IoErrorCode, syscall: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${DESCRIPTIONS[code]}, ${syscall}`);
  err.code = code;
  err.errno = -constants.errno[code];
  err.syscall = syscall;
  return err;
}

/**
 * A fault at one point of a voter's log storage, off until `arm`: then the storage's call there fails
 * with the error, as the I/O call it stands for would, each time it is reached, until `disarm`.
 */
export class StorageFault {
  /** How many times the armed fault was hit. */
  hits = 0;
  private error: NodeJS.ErrnoException | null = null;

  constructor(private readonly point: StorageFaultPoint) {}

  readonly hook: FaultHook = (point) => {
    if (point !== this.point || this.error === null) return;
    this.hits++;
    throw this.error;
  };

  arm(code: IoErrorCode, syscall = "fdatasync"): NodeJS.ErrnoException {
    this.error = ioError(code, syscall);
    return this.error;
  }

  disarm(): void {
    this.error = null;
  }
}

/** Stops voter `i` of the cluster and starts it again with `faults` in its storage. */
export async function restartWithFaults(
  cluster: VoterCluster,
  i: number,
  faults: VoterFaults,
): Promise<void> {
  await cluster.stop(i);
  const config = loadVoterConfig({ env: cluster.envs[i]! });
  cluster.voters[i] = await startVoter(config, pino({ level: "silent" }), faults);
}

/**
 * Caps the voter's state database at the pages it has now (SQLite's max_page_count, on the state
 * machine's own connection, so until the voter restarts): the next apply that needs a new page fails
 * with SQLITE_FULL, as on a full disk.
 */
export function capStateDatabase(voter: RunningVoter): void {
  const stateMachine = driverParts(voter.driver).stateMachine as unknown as StateMachine;
  const db = (stateMachine as unknown as { readonly session: { readonly db: Database.Database } }).session.db;
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages}`);
}

/** Counts the messages the driver hands its transport once it has failed; read `count` at any time. */
export function sendsAfterFailure(driver: RaftDriver): { readonly count: number; readonly types: string[] } {
  const { transport } = driverParts(driver);
  const seen = { count: 0, types: [] as string[] };
  const send = transport.send.bind(transport);
  vi.spyOn(transport, "send").mockImplementation((m: Message) => {
    if (driver.failureCause() !== null) {
      seen.count++;
      seen.types.push(m.type);
    }
    send(m);
  });
  return seen;
}

/** The state machine's whole content, in a canonical order, for comparing voters. */
export function stateDump(voter: RunningVoter): string {
  return (driverParts(voter.driver).stateMachine as unknown as StateMachine).dump();
}
