import type { NodeId } from "../raft/types.js";

/**
 * The latest wall-clock time a majority of `voters` have reached: the majority-th latest of the
 * readings known, this voter's own and its peers' (`peerWallMs`, as their handshakes told them, never
 * ahead of a peer's own clock); undefined when fewer than a majority are known. A majority of the clocks
 * read that or later, so no minority of clocks ahead of the rest can set it: it is no later than some
 * clock that is right, as long as most are.
 */
export function quorumWallMs(
  self: NodeId,
  ownWallMs: number,
  voters: readonly NodeId[],
  peerWallMs: (voter: NodeId) => number | null,
): number | undefined {
  const readings: number[] = [];
  for (const voter of voters) {
    const reading = voter === self ? ownWallMs : peerWallMs(voter);
    if (reading !== null) readings.push(reading);
  }
  const majority = Math.floor(voters.length / 2) + 1;
  if (readings.length < majority) return undefined;
  readings.sort((a, b) => b - a);
  return Math.floor(readings[majority - 1]!);
}
