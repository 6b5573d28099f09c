import { readFileSync } from "node:fs";
import type { VoterName } from "./app-model.js";

/**
 * The group id each voter runs under when the AppHost runs as root, one of its own, so iptables can
 * tell one voter's loopback packets from another's (network-partition.ts); numbers no real group is
 * likely to use. Without root a process cannot change its group, and voters keep the AppHost's.
 */
export const VOTER_GIDS: Readonly<Record<VoterName, number>> = {
  voter1: 47_101,
  voter2: 47_102,
  voter3: 47_103,
};

/** The voters' own groups when this process may give them one, undefined otherwise. */
export function voterGidsHere(): Readonly<Record<VoterName, number>> | undefined {
  return process.getuid?.() === 0 ? VOTER_GIDS : undefined;
}

/** The effective group id of a running process, from /proc; undefined when it cannot be read. */
export function effectiveGidOf(pid: number): number | undefined {
  try {
    const match = /^Gid:\s+\d+\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}
