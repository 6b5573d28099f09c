import type Database from "better-sqlite3";
import type { ApiKeyHasher } from "./api-key-hasher.js";
import { CanonicalLimitsStore } from "./canonical-limits-store.js";
import { ChangeFeed } from "./change-feed.js";
import { CommandOutcomes } from "./command-outcomes.js";
import { Dispatch } from "./dispatch.js";
import { Documents } from "./documents.js";
import { Graph } from "./graph.js";
import { Membership } from "./membership.js";
import { Principals } from "./principals.js";
import { Queues } from "./queues.js";
import { SearchChanges } from "./search-changes.js";
import { Subscriptions } from "./subscriptions.js";

/** Every feature area's prepared statements over one open database; rebuilt whenever the file changes. */
export interface Stores {
  readonly outcomes: CommandOutcomes;
  readonly feed: ChangeFeed;
  readonly searchChanges: SearchChanges;
  readonly documents: Documents;
  readonly graph: Graph;
  readonly queues: Queues;
  readonly subscriptions: Subscriptions;
  readonly membership: Membership;
  readonly dispatch: Dispatch;
  readonly principals: Principals;
  readonly canonicalLimits: CanonicalLimitsStore;
}

/** `searchedTenants`: the tenants whose documents the search index follows (see SearchChanges). */
export function createStores(
  db: Database.Database,
  searchedTenants: ReadonlySet<string>,
  keyHasher: ApiKeyHasher,
): Stores {
  const feed = new ChangeFeed(db);
  const searchChanges = new SearchChanges(searchedTenants);
  const documents = new Documents(db, feed, searchChanges);
  return {
    outcomes: new CommandOutcomes(db),
    feed,
    searchChanges,
    documents,
    graph: new Graph(db, feed),
    queues: new Queues(db),
    subscriptions: new Subscriptions(db, feed),
    membership: new Membership(db),
    dispatch: new Dispatch(db),
    principals: new Principals(db, keyHasher),
    canonicalLimits: new CanonicalLimitsStore(db),
  };
}
