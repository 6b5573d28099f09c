/** Messages between the state machine's thread and the search index worker. */
import type { SqliteLimits } from "../fs/sqlite-limits.js";

/**
 * A document to (re)index under its row ID, or, without text, one to drop from the index; `token` is its
 * tenant's (see tenantToken), which names the tenant's table in the index.
 */
export type IndexChange =
  | { readonly id: number; readonly token: string; readonly key: string; readonly text: string }
  | { readonly id: number; readonly token: string };

export interface SearchWorkerData {
  readonly path: string;
  readonly limits: SqliteLimits;
  /** One Int32 cell: changes the worker has applied, so the applying thread can bound the backlog. */
  readonly progress: SharedArrayBuffer;
}

export type ToSearchWorker =
  /** `through`: the applied index after the batch these changes came from; null for rebuild chunks. */
  | { readonly type: "changes"; readonly changes: readonly IndexChange[]; readonly through: number | null }
  /**
   * Empties the index ahead of a rebuild that brings it to the state as of `through`; `tenants` are the
   * tenants it indexes from now on (the rebuild sends their documents).
   */
  | { readonly type: "reset"; readonly through: number; readonly tenants: readonly string[] }
  /** Every rebuild chunk has been sent: the index is whole again. */
  | { readonly type: "complete" }
  /** Drops what the index holds of one tenant and starts indexing it (its documents follow as changes). */
  | { readonly type: "beginTenant"; readonly tenant: string; readonly token: string }
  /** Every document of the tenant has been sent since its `beginTenant`. */
  | { readonly type: "endTenant"; readonly tenant: string }
  | {
      readonly type: "query";
      readonly id: number;
      /** The token of the tenant searched: only its table is searched. */
      readonly token: string;
      /** The FTS5 expression (see matchExpression). */
      readonly match: string;
      readonly low: string;
      readonly high: string;
      readonly limit: number;
      /** Only hits ranked after this one (see SearchCursor). */
      readonly after: { readonly score: number; readonly key: string } | null;
    }
  | { readonly type: "close" };

export interface IndexHit {
  readonly key: string;
  readonly score: number;
}

export type FromSearchWorker =
  | { readonly type: "opened"; readonly indexedThrough: number; readonly complete: boolean }
  | { readonly type: "hits"; readonly id: number; readonly hits: IndexHit[] }
  /** `id` names the failed query, or is null when applying changes failed (the index is then unusable). */
  | { readonly type: "failed"; readonly id: number | null; readonly message: string };
