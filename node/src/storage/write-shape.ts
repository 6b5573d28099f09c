import { isEntryType } from "../raft/entry-type.js";
import { RaftInvariantError } from "../raft/errors.js";
import type { Entry, HardState, SnapshotMeta } from "../raft/types.js";
import { StorageArgumentError } from "./storage-errors.js";

/** The longest vote the journal's record holds: a 16-bit length, with 0xffff meaning no vote. */
export const MAX_VOTE_BYTES = 0xfffe;

/** The parts of a write whose shape can be checked without looking at the stored log. */
export interface WriteShape {
  readonly snapshot: { readonly meta: SnapshotMeta } | null;
  readonly entries: readonly Entry[];
  readonly hardState: HardState | null;
}

/**
 * Why a write is malformed in itself, or null: values of the wrong kind (StorageArgumentError), or
 * entries that are not consecutive or whose terms go backwards (RaftInvariantError).
 */
export function checkWriteShape(w: WriteShape): Error | null {
  if (w.snapshot !== null) {
    const m = w.snapshot.meta;
    if (!isPositive(m.index) || !isPositive(m.term)) {
      return new StorageArgumentError(
        `snapshot index and term must be positive integers, got ${m.index}/${m.term}`,
      );
    }
    if (!Array.isArray(m.conf?.voters) || !m.conf.voters.every((v) => typeof v === "string")) {
      return new StorageArgumentError("snapshot conf must list its voters as strings");
    }
  }
  const entries = w.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (!isPositive(e.index) || !isPositive(e.term)) {
      return new StorageArgumentError(
        `entry index and term must be positive integers, got ${e.index}/${e.term}`,
      );
    }
    if (!isEntryType(e.type))
      return new StorageArgumentError(`entry ${e.index} has unknown type ${String(e.type)}`);
    if (!(e.data instanceof Uint8Array))
      return new StorageArgumentError(`entry ${e.index} data is not bytes`);
    if (i === 0) continue;
    const prev = entries[i - 1]!;
    if (e.index !== prev.index + 1) {
      return new RaftInvariantError(`entries are not consecutive: ${e.index} follows ${prev.index}`);
    }
    if (e.term < prev.term) {
      return new RaftInvariantError(`entry ${e.index} has term ${e.term}, below term ${prev.term} before it`);
    }
  }
  const hs = w.hardState;
  if (hs !== null) {
    if (!isNonNegative(hs.term) || !isNonNegative(hs.commit)) {
      return new StorageArgumentError(`hard state term and commit must be non-negative integers`);
    }
    if (hs.vote !== null && typeof hs.vote !== "string") {
      return new StorageArgumentError("hard state vote must be a node id or null");
    }
    if (hs.vote !== null && Buffer.byteLength(hs.vote, "utf8") > MAX_VOTE_BYTES) {
      return new StorageArgumentError(`hard state vote must be at most ${MAX_VOTE_BYTES} UTF-8 bytes`);
    }
  }
  return null;
}

function isPositive(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 1;
}

function isNonNegative(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}
