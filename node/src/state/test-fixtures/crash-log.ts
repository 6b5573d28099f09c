import { walFrameBytes } from "../../fs/sqlite-limits.js";
import type { ConfState, Entry } from "../../raft/types.js";
import type { SnapshotPolicyOptions } from "../../storage/snapshot-policy.js";
import type { CanonicalLimits } from "../limits.js";

/** The limits of the crash test's parent and child: a voter and its restarted self agree on them. */
export const CRASH_LIMITS: Partial<CanonicalLimits> = {
  outcomeRetentionCommands: 500,
  maxDeliveryAttempts: 2,
};

/** The voters the crash test's log records; only stored, never contacted. */
export const CRASH_CONF: ConfState = { voters: ["n1", "n2", "n3"] };

/** Snapshots every few hundred entries, so the crash test's kills also land around snapshots and compaction. */
export const CRASH_SNAPSHOT_POLICY: SnapshotPolicyOptions = {
  entries: 400,
  bytes: 512 * 1024,
  retainEntries: 50,
};

export function encodeLogLine(entry: Entry): string {
  return JSON.stringify({ ...entry, data: Buffer.from(entry.data).toString("base64") });
}

export function decodeLogLine(line: string): Entry {
  const raw = JSON.parse(line) as Omit<Entry, "data"> & { data: string };
  return { ...raw, data: new Uint8Array(Buffer.from(raw.data, "base64")) };
}

/** WAL per state checkpoint cycle in the crash children, two 16 KiB frames: a cycle every commit or two. */
export const CRASH_CHECKPOINT_BYTES = 2 * walFrameBytes(16 * 1024);
