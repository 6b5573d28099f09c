import { afterEach, vi } from "vitest";
import type { FsyncSite } from "../../fs/fsync.js";
import type { Message } from "../../raft/types.js";
import type { ApplyResult } from "../../state/apply-result.js";
import type { LogWrite } from "../../storage/durable-log-writer.js";
import type { RaftDriver } from "../raft-driver.js";
import { type ClusterOptions, VoterCluster } from "./voter-cluster.js";

/**
 * Starts at most one three-voter cluster per test and disposes of it after the test, whatever the
 * test did: call at a test file's top level, then `await startCluster(options)` in a test.
 */
export function clusterPerTest(): (options?: ClusterOptions) => Promise<VoterCluster> {
  let cluster: VoterCluster | undefined;
  afterEach(async () => {
    await cluster?.dispose();
    cluster = undefined;
  });
  return async (options) => {
    cluster = await VoterCluster.start(options);
    return cluster;
  };
}

/** The parts of a running driver that tests spy on. */
export interface DriverParts {
  readonly transport: { send(m: Message): void };
  readonly store: { sync(): Promise<void>; setFsyncSite(site: FsyncSite): void; snapshotIndex(): number };
  readonly stateMachine: { applyBatch(entries: readonly { index: number }[]): ApplyResult[] };
  readonly writer: { write(write: LogWrite): Promise<void> };
}

export function driverParts(driver: RaftDriver): DriverParts {
  return (driver as unknown as { readonly opts: DriverParts }).opts;
}

/** An entry that is not a command: the state machine applies it as a refusal. */
export const entry = (): Uint8Array => new TextEncoder().encode("not a command: applied as a refusal");

/**
 * Records, in order, what `label` makes of each message the driver sends (nothing when it returns no
 * label) and `apply N` for each entry it applies.
 */
export function sendsAndApplies(driver: RaftDriver, label: (m: Message) => readonly string[]): string[] {
  const { transport, stateMachine } = driverParts(driver);
  const events: string[] = [];
  const send = transport.send.bind(transport);
  vi.spyOn(transport, "send").mockImplementation((m: Message) => {
    events.push(...label(m));
    send(m);
  });
  const applyBatch = stateMachine.applyBatch.bind(stateMachine);
  vi.spyOn(stateMachine, "applyBatch").mockImplementation((entries) => {
    for (const e of entries) events.push(`apply ${e.index}`);
    return applyBatch(entries);
  });
  return events;
}
