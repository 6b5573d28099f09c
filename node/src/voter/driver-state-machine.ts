import type { Entry } from "../raft/types.js";
import type { ApplyResult } from "../state/apply-result.js";

/** An index the state machine applied, with its entry's term. */
export interface StatePosition {
  readonly index: number;
  readonly term: number;
}

/**
 * What a RaftDriver needs of the state machine it applies to: KeyLoad's StateMachine over SQLite, or
 * the simulator's model when it runs the driver itself.
 */
export interface DriverStateMachine {
  applied(): StatePosition;
  /** Applies committed entries in index order, one result per entry. */
  applyBatch(entries: readonly Entry[]): ApplyResult[];
  /** Replaces the whole state with the snapshot file at `path`. */
  restoreFromSnapshot(path: string): StatePosition;
  /** Writes a copy of the state to `path`; resolves with the position it holds. */
  createSnapshot(path: string): Promise<StatePosition>;
  /** Makes the applied state durable; resolves with the position it holds. */
  durablePosition(): Promise<StatePosition>;
  /** Called once when the state fails off the apply path (a commit or an fsync). */
  onFailure(listener: (err: Error) => void): void;
}
