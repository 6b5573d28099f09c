import type { JsonText } from "../../requests/json-text.js";
import type { Edge } from "../graph.js";
import type { SearchCursor } from "../search-query.js";

/** The shapes of the read pages the state machine answers as JSON text (the contract's RESPONSE_SCHEMAS has them). */
export interface ReadDocument {
  readonly key: string;
  readonly value: unknown;
  readonly version: number;
}

export interface BulkGetPage {
  readonly items: (
    | (ReadDocument & { readonly found: true })
    | { readonly key: string; readonly found: false }
  )[];
  readonly remaining?: string[];
}

export interface QueryPage {
  readonly items: ReadDocument[];
  readonly next?: string;
}

export interface SearchPage {
  readonly hits: (ReadDocument & { readonly score: number })[];
  readonly next?: SearchCursor;
}

export interface Traversal {
  readonly nodes: { readonly id: string; readonly depth: number; readonly via: Edge | null }[];
  readonly truncated: boolean;
}

/** A read page, parsed. */
export async function json<T>(page: Promise<JsonText> | JsonText): Promise<T> {
  return JSON.parse((await page).text) as T;
}
