import type { IndexChange } from "./search-protocol.js";
import { tenantToken } from "./search-query.js";

/**
 * The search index changes of the batch being applied, for the tenants the index follows (`indexed`,
 * owned by the SearchIndexer): the others' documents are neither turned into text nor sent. They reach
 * the index only once the batch has committed; a command that rolls back drops what it added
 * (`rollbackTo` its `mark`).
 */
export class SearchChanges {
  private pending: IndexChange[] = [];

  constructor(private readonly indexed: ReadonlySet<string>) {}

  /** Whether the index follows `tenant`: only then is a document's text worth extracting. */
  follows(tenant: string): boolean {
    return this.indexed.has(tenant);
  }

  /** A document of a followed tenant (see `follows`). */
  index(documentId: number, tenant: string, key: string, text: string): void {
    this.pending.push({ id: documentId, token: tenantToken(tenant), key, text });
  }

  drop(documentId: number, tenant: string): void {
    if (this.indexed.has(tenant)) this.pending.push({ id: documentId, token: tenantToken(tenant) });
  }

  mark(): number {
    return this.pending.length;
  }

  rollbackTo(mark: number): void {
    this.pending.length = mark;
  }

  /** Hands over everything pending and starts empty. */
  take(): IndexChange[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }
}
