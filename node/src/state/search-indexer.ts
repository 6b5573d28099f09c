import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { Worker } from "node:worker_threads";
import { InternalError, UnavailableError } from "@keyload/contract";
import type { SqliteLimits } from "../fs/sqlite-limits.js";
import type { KeyRange } from "./key-range.js";
import type {
  FromSearchWorker,
  IndexChange,
  IndexHit,
  SearchWorkerData,
  ToSearchWorker,
} from "./search-protocol.js";
import { type SearchCursor, type TenantMatch, tenantToken } from "./search-query.js";
import { siblingModule, startWorker } from "./worker-thread.js";

/** What a rebuild reads from the state database. */
export interface IndexSource {
  /**
   * Live documents of `tenant` as changes to index, in key order from the first key after `afterKey`
   * (null: from the start): at most `limit` rows, and fewer once their values pass `maxBytes` (one at
   * least); `lastKey` is the last row read and `done` says no row is left. Read through the tenant's
   * key index, so a chunk costs its own rows whatever the other tenants hold.
   */
  readChunk(
    tenant: string,
    afterKey: string | null,
    limit: number,
    maxBytes: number,
  ): { changes: IndexChange[]; lastKey: string | null; done: boolean };
  /** The applied index now: what a rebuild starting now brings the index to. */
  appliedIndex(): number;
}

/**
 * Committed changes are held this long, or until this many wait, and sent as one message: the worker
 * indexes each message in one FTS5 transaction, and small transactions (one per apply batch, at low
 * concurrency one per write) cost it several times the indexing itself, plus a thread wake-up each.
 * A search sends what is held first, so it still sees every change committed before it.
 */
const HOLD_MS = 20;
const HOLD_CHANGES = 1_000;
/** Index changes sent but not yet applied beyond which applying waits for the worker. */
const MAX_BACKLOG = 100_000;
/** The longest one submit waits for the backlog to shrink, so a stuck worker cannot stall applies. */
const MAX_WAIT_MS = 1000;
const REBUILD_CHUNK = 500;
/** A rebuild chunk's values stop at about this many bytes, however few rows that is (documents may be large). */
const REBUILD_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * The applying thread's side of the full-text index. FTS5 indexing costs about as much as applying the
 * document itself, so it runs on a worker thread (the voter's second core) instead of inside the
 * apply: the index is derived state, fed each committed batch's changes in commit order. A search is
 * still linearizable: its query reaches the worker after every change committed before it.
 *
 * The index follows only the tenants that have searched (`indexed`, shared with the applying side's
 * SearchChanges, which sends nothing for the others): a tenant's first search adds it and builds its
 * part from the documents, and that search and the ones after it wait for the build.
 *
 * At start the index is reused only if it is complete and indexed exactly through the database's
 * applied index (the state at an index is the same on every voter, so that proves it matches);
 * otherwise, and after a snapshot is installed, it is rebuilt from the documents in the background and
 * searches wait for the rebuild. A tenant whose build a crash cut short is built again.
 */
export class SearchIndexer {
  private readonly worker: Worker;
  private readonly progress = new Int32Array(new SharedArrayBuffer(4));
  private submitted = 0;
  private held: IndexChange[] = [];
  /** The applied index the held changes bring the index to; null when nothing is held. */
  private heldThrough: number | null = null;
  private holdTimer: NodeJS.Timeout | null = null;
  private readonly sendHeldCallback = (): void => this.sendHeld();
  private readonly queries = new Map<
    number,
    { resolve: (hits: IndexHit[]) => void; reject: (e: Error) => void }
  >();
  private nextQueryId = 1;
  private failure: string | null = null;
  private rebuilding: Promise<void>;
  private generation = 0;
  private readonly exited: Promise<void>;
  private opened: (status: { indexedThrough: number; complete: boolean }) => void = () => {};

  /**
   * `indexed` holds the tenants the index file follows (see SearchIndexStore.readTenants), and this
   * adds to it; `unfinished` are those of them whose build had not finished.
   */
  constructor(
    path: string,
    appliedAtOpen: number,
    private readonly source: IndexSource,
    private readonly indexed: Set<string>,
    unfinished: readonly string[],
    limits: SqliteLimits,
  ) {
    const data: SearchWorkerData = { path, limits, progress: this.progress.buffer as SharedArrayBuffer };
    this.worker = startWorker(siblingModule(import.meta.url, "search-worker"), data);
    const status = new Promise<{ indexedThrough: number; complete: boolean }>((resolve) => {
      this.opened = resolve;
    });
    this.worker.on("message", (message: FromSearchWorker) => {
      if (message.type === "opened") this.opened(message);
      else if (message.type === "hits") this.settle(message.id, message.hits, null);
      else if (message.type === "failed") {
        if (message.id === null) this.fail(`the search index failed: ${message.message}`);
        else this.settle(message.id, [], message.message);
      }
    });
    this.worker.on("error", (error) => this.fail(`the search worker crashed: ${String(error)}`));
    this.exited = new Promise((resolve) => {
      this.worker.once("exit", () => {
        this.fail("the search worker has exited");
        resolve();
      });
    });
    this.rebuilding = status.then(async (found) => {
      // A snapshot installed meanwhile has started its own rebuild, which supersedes this check.
      if (this.generation !== 0) return;
      if (!found.complete || found.indexedThrough !== appliedAtOpen) await this.rebuildFrom(0);
      else for (const tenant of unfinished) await this.buildTenant(tenant, 0);
    });
  }

  /** Sends a committed batch's changes; `through` is the applied index after that batch. */
  submit(changes: readonly IndexChange[], through: number): void {
    for (const change of changes) this.held.push(change);
    this.heldThrough = through;
    if (this.held.length >= HOLD_CHANGES) this.sendHeld();
    // A batch that changed nothing indexed (no tenant that searched wrote) only moves `through`, which
    // goes with the next changes, query or close: a message for it alone cost a busy leader a share of
    // its event loop to move a number nothing read in between (docs/decisions/0008-lazy-search-indexing.md).
    else if (this.holdTimer === null && this.held.length > 0) {
      this.holdTimer = setTimeout(this.sendHeldCallback, HOLD_MS);
      this.holdTimer.unref();
    }
  }

  /** Starts over from the documents as they are now (after a snapshot replaced them). */
  rebuild(): void {
    this.generation++;
    this.rebuilding = this.rebuildFrom(this.generation);
  }

  /** Searches `tenant`'s documents; `match` must be made for it (see matchExpression). */
  async query(
    tenant: string,
    match: TenantMatch,
    range: KeyRange,
    limit: number,
    after: SearchCursor | undefined,
  ): Promise<IndexHit[]> {
    if (match.token !== tenantToken(tenant)) {
      throw new InternalError("a search was made for another tenant", { reason: "SearchIndexUnavailable" });
    }
    if (!this.indexed.has(tenant)) this.follow(tenant);
    for (let waited: Promise<void> | null = null; waited !== this.rebuilding; ) {
      waited = this.rebuilding;
      try {
        await waited;
      } catch (err) {
        // Reading the documents failed: so does every search here until a rebuild succeeds.
        throw unavailable(`this voter's search index could not be built: ${(err as Error).message}`);
      }
    }
    if (this.failure !== null) throw unavailable(this.failure);
    const id = this.nextQueryId++;
    const hits = new Promise<IndexHit[]>((resolve, reject) => this.queries.set(id, { resolve, reject }));
    this.sendHeld();
    this.send({
      type: "query",
      id,
      token: match.token,
      match: match.expression,
      low: range.low,
      high: range.high,
      limit,
      after: after ?? null,
    });
    return hits;
  }

  async close(): Promise<void> {
    this.generation++;
    this.sendHeld();
    if (this.failure === null) this.send({ type: "close" });
    await this.exited;
  }

  /**
   * Starts following a tenant: its changes are sent from the next apply on, and its build, queued
   * behind any build already running, sends the documents it had before.
   */
  private follow(tenant: string): void {
    this.indexed.add(tenant);
    const generation = this.generation;
    this.rebuilding = this.rebuilding.catch(() => undefined).then(() => this.buildTenant(tenant, generation));
  }

  private async rebuildFrom(generation: number): Promise<void> {
    // Posted before any later batch's changes, so those land on top of the emptied index; the chunks
    // read afterwards already include every batch committed before they are read.
    // Held changes belong to the state before the reset, so they go first.
    this.sendHeld();
    this.send({ type: "reset", through: this.source.appliedIndex(), tenants: [...this.indexed] });
    if (await this.sendDocuments(generation, null)) this.send({ type: "complete" });
  }

  /** Skipped when a full rebuild has started since: that one covers every followed tenant. */
  private async buildTenant(tenant: string, generation: number): Promise<void> {
    if (generation !== this.generation || this.failure !== null) return;
    // The tenant's rows are dropped first: changes sent earlier belong to a state the documents replace.
    this.sendHeld();
    this.send({ type: "beginTenant", tenant, token: tenantToken(tenant) });
    if (await this.sendDocuments(generation, tenant)) this.send({ type: "endTenant", tenant });
  }

  /**
   * Sends the live documents of `tenant` (null: of every followed tenant, one after another) in chunks,
   * one per turn, so applies go on meanwhile; false when a newer rebuild superseded this one.
   */
  private async sendDocuments(generation: number, tenant: string | null): Promise<boolean> {
    for (const each of tenant === null ? [...this.indexed].sort() : [tenant]) {
      let afterKey: string | null = null;
      for (;;) {
        await nextTurn();
        if (generation !== this.generation || this.failure !== null) return false;
        await this.backlogDrained();
        const chunk = this.source.readChunk(each, afterKey, REBUILD_CHUNK, REBUILD_CHUNK_BYTES);
        if (chunk.changes.length > 0) {
          this.send({ type: "changes", changes: chunk.changes, through: null });
          this.submitted = (this.submitted + chunk.changes.length) | 0;
        }
        if (chunk.done) break;
        afterKey = chunk.lastKey;
      }
    }
    return true;
  }

  private backlog(): number {
    return (this.submitted - Atomics.load(this.progress, 0)) | 0;
  }

  /**
   * Blocks the applying thread while the worker is far behind: the backlog is memory, and applying
   * faster than the index can follow would only grow it. Bounded in time, so a stuck worker cannot
   * stop applies (searches then fail instead).
   */
  private waitForBacklog(): void {
    const deadline = performance.now() + MAX_WAIT_MS;
    for (let processed = Atomics.load(this.progress, 0); this.backlog() > MAX_BACKLOG; ) {
      const remaining = deadline - performance.now();
      if (remaining <= 0 || this.failure !== null) return;
      Atomics.wait(this.progress, 0, processed, remaining);
      processed = Atomics.load(this.progress, 0);
    }
  }

  private async backlogDrained(): Promise<void> {
    while (this.backlog() > MAX_BACKLOG / 2 && this.failure === null) {
      await sleep(5);
    }
  }

  /** Sends the held changes; everything sent to the worker later lands on top of them. */
  private sendHeld(): void {
    if (this.holdTimer !== null) clearTimeout(this.holdTimer);
    this.holdTimer = null;
    if (this.heldThrough === null) return;
    const changes = this.held;
    const through = this.heldThrough;
    this.held = [];
    this.heldThrough = null;
    this.waitForBacklog();
    this.send({ type: "changes", changes, through });
    this.submitted = (this.submitted + changes.length) | 0;
  }

  private send(message: ToSearchWorker): void {
    if (this.failure === null) this.worker.postMessage(message);
  }

  private settle(id: number, hits: IndexHit[], error: string | null): void {
    const waiting = this.queries.get(id);
    if (waiting === undefined) return;
    this.queries.delete(id);
    // The query's words are quoted (matchExpression): a query the index cannot evaluate is the index's
    // failure on this voter, not the caller's, and another voter may answer it.
    if (error === null) waiting.resolve(hits);
    else waiting.reject(unavailable(`this voter's search index could not evaluate the query: ${error}`));
  }

  private fail(reason: string): void {
    this.failure ??= reason;
    // A worker that died before opening still settles the start, so searches fail instead of hanging.
    this.opened({ indexedThrough: -1, complete: false });
    for (const waiting of this.queries.values()) waiting.reject(unavailable(reason));
    this.queries.clear();
  }
}

/** This voter's search index failing: Unavailable, so a client asks another voter. */
function unavailable(reason: string): UnavailableError {
  return new UnavailableError(reason, { reason: "SearchIndexUnavailable" });
}
