import { LogUnavailableError, RaftInvariantError, SnapshotOutOfDateError } from "../raft/errors.js";
import type { HardState } from "../raft/types.js";
import type { StoreOp } from "./durable-log-store.js";
import type { SnapshotRecord } from "./log-database.js";
import { checkWriteShape } from "./write-shape.js";

/** What the refusal rules read of a log as it stands: DurableLogStore's, or the simulator's model of it. */
export interface RefusalView {
  readonly snapshot: SnapshotRecord;
  readonly hardState: HardState;
  /** The compaction point: entries after it are retained, its own term is still answered. */
  readonly startIndex: number;
  readonly lastIndex: number;
  term(index: number): number;
}

/**
 * Why `op` cannot be applied to the log `log` describes (earlier ops of its group included), or null:
 * a gap, an append over committed entries, a term going back, a stale snapshot, a rewritten vote.
 */
export function storeOpRefusal(log: RefusalView, op: StoreOp): Error | null {
  const current = log.snapshot.meta.index;
  if (op.kind === "record-snapshot") {
    const { meta, file } = op.snapshot;
    return localSnapshotRefusal(log, meta.index, meta.term, file !== null);
  }
  const shape = checkWriteShape(op);
  if (shape !== null) return shape;
  let start = log.startIndex;
  let last = log.lastIndex;
  let snapIndex = current;
  let snapTerm = log.snapshot.meta.term;
  if (op.snapshot !== null) {
    const meta = op.snapshot.meta;
    if (meta.index <= current) return new SnapshotOutOfDateError(meta.index, current);
    start = last = snapIndex = meta.index;
    snapTerm = meta.term;
  }
  const entries = op.entries;
  if (entries.length > 0) {
    const first = entries[0]!.index;
    if (first > last + 1) {
      return new RaftInvariantError(`append at ${first} leaves a gap after last index ${last}`);
    }
    const skip = Math.max(0, start + 1 - first);
    if (skip < entries.length) {
      const from = first + skip;
      const floor = Math.max(log.hardState.commit, snapIndex);
      if (from <= last && from <= floor) {
        return new RaftInvariantError(`append at ${from} would replace committed entries (up to ${floor})`);
      }
      const prevTerm = from - 1 === snapIndex && op.snapshot !== null ? snapTerm : log.term(from - 1);
      const firstTerm = entries[skip]!.term;
      if (firstTerm < prevTerm) {
        return new RaftInvariantError(
          `entry ${from} has term ${firstTerm}, below term ${prevTerm} before it`,
        );
      }
      last = entries[entries.length - 1]!.index;
    }
  }
  const hs = op.hardState;
  const prev = log.hardState;
  const commit = (hs ?? prev).commit;
  if (commit > last) {
    return new RaftInvariantError(`hard state commit ${commit} is beyond the last index ${last}`);
  }
  if (hs !== null) {
    if (hs.term < prev.term) {
      return new RaftInvariantError(`hard state term ${hs.term} is below the stored term ${prev.term}`);
    }
    if (hs.term === prev.term && prev.vote !== null && hs.vote !== prev.vote) {
      return new RaftInvariantError(
        `hard state changes the vote of term ${hs.term} from ${prev.vote} to ${String(hs.vote)}`,
      );
    }
  }
  return null;
}

/**
 * The refusal a snapshot at (index, term) taken locally meets, or null. A copy may stand at the index
 * of the point with no file it makes sendable; a point only beyond the current snapshot.
 */
export function localSnapshotRefusal(
  log: RefusalView,
  index: number,
  term: number,
  withFile: boolean,
): Error | null {
  const current = log.snapshot;
  const replacesPoint = withFile && current.file === null && current.meta.index > 0;
  if (index < current.meta.index || (index === current.meta.index && !replacesPoint)) {
    return new SnapshotOutOfDateError(index, current.meta.index);
  }
  if (index > log.lastIndex) return new LogUnavailableError(index, log.lastIndex);
  const logTerm = log.term(index);
  if (term !== logTerm) {
    return new RaftInvariantError(`snapshot at ${index} has term ${term}, the log has term ${logTerm} there`);
  }
  return null;
}
