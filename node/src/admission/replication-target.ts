import type { KeyLoadError } from "@keyload/contract";

/** What became of one command: its result, or the typed error its caller answers with. */
export type CommandOutcome<R> =
  | { readonly ok: true; readonly value: R }
  | { readonly ok: false; readonly error: KeyLoadError };

/**
 * Where the command scheduler hands each unit: the leader replicates it through Raft and applies it, a
 * follower forwards it to the leader. This is the scheduler's only dependency on the rest of the voter.
 */
export interface ReplicationTarget<C, R> {
  /**
   * Replicates or forwards `batch` as one unit and resolves with one outcome per command, in the same
   * order. A rejection applies to every command of the unit: a KeyLoadError as it is (for instance an
   * explicit leader admission rejection, or Unavailable when nothing was submitted), anything else as
   * UnknownWriteOutcome. `signal` aborts when the replication deadline passes; the scheduler has then
   * already answered the unit with UnknownWriteOutcome and the target should stop waiting.
   *
   * A target that learns of the commit before the outcomes (the leader, which applies the entries
   * after its quorum acknowledged them) calls `committed` then: the unit's replication is over, so the
   * scheduler starts the next one while this one's outcomes are still being worked out. It returns
   * whether a next unit is about to start, which the leader then sends before it applies this one.
   */
  replicate(
    batch: readonly C[],
    signal: AbortSignal,
    committed: () => boolean,
    ahead?: OutcomesAhead<R>,
  ): Promise<readonly CommandOutcome<R>[]>;
}

/**
 * The first `count` commands of a unit (its control commands), whose successful outcomes a target may
 * report through `settle` as soon as each is known, ahead of the rest of the unit: the leader applies
 * them at the unit's commit, while the data behind them waits for the next unit's appends to go out.
 * The promise `replicate` returns still resolves with every outcome.
 */
export interface OutcomesAhead<R> {
  readonly count: number;
  readonly settle: (index: number, outcome: CommandOutcome<R>) => void;
}
