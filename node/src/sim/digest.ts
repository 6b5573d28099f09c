import type { Entry } from "../raft/types.js";

/**
 * 32-bit digests used to compare entries and whole applied prefixes in O(1). They only ever decide
 * "same or different" inside one run; a collision could hide a divergence but never invent one.
 */

export function hashBytes(seed: number, data: Uint8Array): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < data.length; i++) {
    h ^= data[i]!;
    h = Math.imul(h, 0x01000193);
  }
  return finalize(h ^ data.length);
}

export function combine(h: number, value: number): number {
  return finalize(Math.imul(h ^ 0x9e3779b9, 0x01000193) ^ value);
}

const NOOP_SEED = 0x6e6f6f70;
const NORMAL_SEED = 0x6e726d6c;

/** The identity of an entry's content; index and term are compared separately. */
export function entryDigest(entry: Entry): number {
  return hashBytes(entry.type === "noop" ? NOOP_SEED : NORMAL_SEED, entry.data);
}

/** The `entryDigest` a proposal of `data` will have once it is an entry. */
export function commandDigest(data: Uint8Array): number {
  return hashBytes(NORMAL_SEED, data);
}

/**
 * The digest of a log prefix ending at `index`: two prefixes with equal chains hold the same entries,
 * which is how a snapshot is compared with what other nodes applied without replaying it.
 */
export function chainDigest(previous: number, index: number, term: number, digest: number): number {
  return combine(combine(combine(previous, index), term), digest);
}

function finalize(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
