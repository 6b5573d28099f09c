import type { SnapshotMeta } from "../raft/types.js";
import { StorageArgumentError } from "./storage-errors.js";

/** A snapshot's index and term are positive integers. */
export function checkSnapshotMeta(meta: SnapshotMeta): void {
  if (
    !Number.isSafeInteger(meta.index) ||
    meta.index < 1 ||
    !Number.isSafeInteger(meta.term) ||
    meta.term < 1
  ) {
    throw new StorageArgumentError(
      `snapshot index and term must be positive integers, got ${meta.index}/${meta.term}`,
    );
  }
}

/** What a snapshot to receive announces: its meta and a size that is a non-negative integer. */
export function checkSnapshotToReceive(meta: SnapshotMeta, totalBytes: number): void {
  checkSnapshotMeta(meta);
  if (!Number.isSafeInteger(totalBytes) || totalBytes < 0) {
    throw new StorageArgumentError(`snapshot size must be a non-negative integer, got ${totalBytes}`);
  }
}
