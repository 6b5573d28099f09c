/** Messages between the state machine's thread and the read worker (see CatalogReader). */
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import type { QueryRequest } from "./catalog-query.js";
import type { TraverseRequest } from "./graph.js";
import type { IndexHit } from "./search-protocol.js";

export interface CatalogReadWorkerData {
  /** The state database, opened read-only. */
  readonly path: string;
  /** The connection's page cache and mapping, as the applying connection's. */
  readonly limits: SqliteLimits;
}

/** One page to read: what it asks, answered as JSON text (see CatalogQueries and GraphTraversal). */
export type CatalogRead =
  | { readonly kind: "bulkGet"; readonly tenant: string; readonly keys: readonly string[] }
  | { readonly kind: "query"; readonly tenant: string; readonly request: QueryRequest }
  | { readonly kind: "traverse"; readonly tenant: string; readonly request: TraverseRequest }
  | {
      readonly kind: "searchHits";
      readonly tenant: string;
      readonly hits: readonly IndexHit[];
      readonly full: boolean;
    };

export type ToCatalogReader =
  | { readonly type: "read"; readonly id: number; readonly read: CatalogRead }
  /** The database file was replaced (a snapshot was installed): open it again before the next read. */
  | { readonly type: "reopen" };

export type FromCatalogReader =
  | { readonly id: number; readonly ok: true; readonly text: string }
  | { readonly id: number; readonly ok: false; readonly message: string };
