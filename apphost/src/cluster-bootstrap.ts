import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { AppModel, VoterName } from "./app-model.js";
import { StateDirError } from "./apphost-errors.js";

interface BootstrapRecord {
  readonly clusterId: string;
  /** The voters that have been started in this state dir at least once. */
  readonly started: readonly VoterName[];
}

/**
 * Whether a voter about to start should bootstrap the cluster, decided from the state dir's record.
 * Each voter's first start in a state dir (the first `up`, or any after `--fresh`) bootstraps: all of
 * them write the same first entry, so they form one new cluster under the ID made then. A voter that
 * has started before and has lost its data is not told to: it joins as a new member, which the
 * cluster must add, and never votes with what it no longer holds. Returns the ID to bootstrap with,
 * or null; the voter counts as started from here on.
 */
export function bootstrapIdFor(model: AppModel, name: VoterName): string | null {
  const record = readRecord(model.bootstrapFile) ?? { clusterId: randomUUID(), started: [] };
  if (record.started.includes(name)) return null;
  writeRecord(model.bootstrapFile, { ...record, started: [...record.started, name] });
  return record.clusterId;
}

function readRecord(file: string): BootstrapRecord | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const { clusterId, started } = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    if (typeof clusterId === "string" && Array.isArray(started)) {
      return { clusterId, started: started.filter((s): s is VoterName => typeof s === "string") };
    }
  } catch {
    // Reported below.
  }
  throw new StateDirError(`${file} is damaged; start over with --fresh`);
}

function writeRecord(file: string, record: BootstrapRecord): void {
  const temp = `${file}.tmp`;
  writeFileSync(temp, `${JSON.stringify(record)}\n`);
  renameSync(temp, file);
}
