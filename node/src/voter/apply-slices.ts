import type { Entry } from "../raft/types.js";

/**
 * Entry bytes a voter applies in one turn of its event loop; what follows in a larger batch is applied
 * in the next turns. A unit of 32 writes of 64 KiB is 2 MiB, and applying that in one go held the loop
 * of every voter while peer messages, answers and timers waited
 * (docs/decisions/0029-applies-in-slices.md). Batches of small entries stay whole.
 */
export const APPLY_SLICE_BYTES = 512 * 1024;

/**
 * How many of `entries`, from the first, make one slice: up to and including the entry that brings
 * their data to `maxBytes`, and always at least one.
 */
export function applySliceEnd(entries: readonly Entry[], maxBytes: number = APPLY_SLICE_BYTES): number {
  let bytes = 0;
  for (let i = 0; i < entries.length; i++) {
    bytes += entries[i]!.data.byteLength;
    if (bytes >= maxBytes) return i + 1;
  }
  return entries.length;
}
