import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AppModel, VoterName, VoterResource } from "./app-model.js";
import { StateDirError } from "./apphost-errors.js";

interface BootstrapRecord {
  readonly clusterId: string;
  /** The voters that have bootstrapped (or joined) in this state dir: each kept its member identity once. */
  readonly started: readonly VoterName[];
}

type BootstrapModel = Pick<AppModel, "bootstrapFile" | "voters">;

/**
 * Whether a voter about to start should bootstrap the cluster, decided from the state dir's record.
 * A voter that has never bootstrapped in this state dir (the first `up`, any after `--fresh`, or a
 * first `up` that failed or was interrupted before it got that far) is told to, with the one ID made
 * for the state dir: all of them write the same first entry, so they form one cluster under it. A
 * voter that has bootstrapped once and has lost its data is not told to: it joins as a new member,
 * which the cluster must add, and never votes with what it no longer holds. Returns the ID, or null.
 */
export function bootstrapIdFor(model: BootstrapModel, name: VoterName): string | null {
  const record = recordBootstrapped(model);
  return record.started.includes(name) ? null : record.clusterId;
}

/**
 * Records the voters whose data dir now holds their member identity, and returns the record. Called
 * before each start and whenever a voter came up or exited, so a voter's data lost later is noticed.
 */
export function recordBootstrapped(model: BootstrapModel): BootstrapRecord {
  const known = readRecord(model.bootstrapFile);
  const holding = model.voters.filter(holdsIdentity).map((v) => v.name);
  // No voter holds an identity: none has ever come up, whatever an older AppHost recorded when it
  // spawned them (it counted a spawn as a start), so there is no cluster a new bootstrap could split.
  const kept = holding.length === 0 ? [] : (known?.started ?? []);
  const started = [...kept, ...holding.filter((name) => !kept.includes(name))];
  const record = { clusterId: known?.clusterId ?? randomUUID(), started };
  const unchanged =
    known !== undefined &&
    known.started.length === started.length &&
    known.started.every((name, i) => started[i] === name);
  if (!unchanged) writeRecord(model.bootstrapFile, record);
  return record;
}

/**
 * Whether the voter kept its member identity, beside its Raft log: it does so once it has bootstrapped
 * or been made a new member, before it serves anything (node/src/voter/member-identity.ts). A data dir
 * that exists without it (a voter stopped before that point) holds nothing another voter relies on.
 */
function holdsIdentity(voter: Pick<VoterResource, "dataDir">): boolean {
  return existsSync(join(voter.dataDir, "raft", "member.json"));
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
