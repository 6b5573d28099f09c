import type { Entry } from "../../raft/types.js";
import type { CanonicalLimits } from "../limits.js";

/** The limits of the crash test's parent and child: a voter and its restarted self agree on them. */
export const CRASH_LIMITS: Partial<CanonicalLimits> = {
  outcomeRetentionCommands: 500,
  maxDeliveryAttempts: 2,
};

export function encodeLogLine(entry: Entry): string {
  return JSON.stringify({ ...entry, data: Buffer.from(entry.data).toString("base64") });
}

export function decodeLogLine(line: string): Entry {
  const raw = JSON.parse(line) as Omit<Entry, "data"> & { data: string };
  return { ...raw, data: new Uint8Array(Buffer.from(raw.data, "base64")) };
}
