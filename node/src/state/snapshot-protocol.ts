/** Messages between the state machine's thread and the snapshot worker. */

/** Copy the state database at `source` to `target`. */
export interface SnapshotCopyRequest {
  readonly id: number;
  readonly source: string;
  readonly target: string;
}

export type SnapshotCopyReply =
  | { readonly id: number; readonly ok: true; readonly index: number; readonly term: number }
  | { readonly id: number; readonly ok: false; readonly message: string; readonly reason: string | null };
