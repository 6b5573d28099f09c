import { KeyLoadError } from "@keyload/contract";
import { StorageError } from "../storage/storage-errors.js";

/** Where the failure that stopped a voter arose. */
export type VoterFailureSource =
  /** The Raft log: a write, an fsync, or its background work. */
  | "storage"
  /** The state machine: an apply, or the commit of applied entries. */
  | "apply"
  /** Anything else the Raft driver or core threw: a bug, equally a reason to stop. */
  | "driver";

/**
 * Why a voter stopped for good (fail-stop): after a failed fsync or apply nothing since the last good
 * one can be trusted, so the process ends and its restart recovers from what is durable.
 */
export class VoterFailedError extends Error {
  readonly code = "VoterFailed";
  readonly source: VoterFailureSource;

  constructor(source: VoterFailureSource, cause: Error) {
    super(`the voter stopped after a ${source} failure: ${cause.message}`, { cause });
    this.name = new.target.name;
    this.source = source;
  }

  static from(err: unknown): VoterFailedError {
    if (err instanceof VoterFailedError) return err;
    const cause = err instanceof Error ? err : new Error(String(err));
    if (cause instanceof StorageError) return new VoterFailedError("storage", cause);
    // The state machine reports its failures as Internal (ApplyFailed, StateCommitFailed, StateSyncFailed,
    // ApplyGap).
    if (cause instanceof KeyLoadError && cause.code === "Internal")
      return new VoterFailedError("apply", cause);
    return new VoterFailedError("driver", cause);
  }
}
