import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { CommandIdConflictError, InternalError, InvalidArgumentError, KeyLoadError } from "@keyload/contract";
import type Database from "better-sqlite3";
import { fsyncPathAsync } from "../fs/fsync.js";
import { DEFAULT_STORAGE_LIMITS, pageBytesOf, type StorageLimits } from "../fs/sqlite-limits.js";
import type { Entry } from "../raft/types.js";
import type { JsonText } from "../requests/json-text.js";
import { READ_LIMITS } from "../requests/read-limits.js";
import type { AuthorizationRefusal, Role } from "../requests/roles.js";
import type { FaultHook } from "../storage/fault-hook.js";
import type { ApiKeyHasher } from "./api-key-hasher.js";
import { ApplyCommits } from "./apply-commits.js";
import type { ApplyContext } from "./apply-context.js";
import type { ApplyResult } from "./apply-result.js";
import type { QueryRequest } from "./catalog-query.js";
import type { CatalogRead } from "./catalog-read-protocol.js";
import { CatalogReader } from "./catalog-reader.js";
import { type CommandEnvelope, commandDigest, decodeCommand, isSystemKind } from "./command-envelope.js";
import { COMMAND_HANDLERS, REFUSES_AFTER_WRITING } from "./command-handlers.js";
import type { CommandOutcome, ExpiredOutcome } from "./command-outcomes.js";
import { type AppliedPosition, type MetaRow, openDatabase, readMeta } from "./database.js";
import type { Directive } from "./dispatch.js";
import type { StoredDocument } from "./documents.js";
import { dumpDatabase } from "./dump.js";
import type { TraverseRequest } from "./graph.js";
import { documentText } from "./json-value.js";
import { prefixRange } from "./key-range.js";
import { type CanonicalLimits, limitsFingerprint, resolveLimits } from "./limits.js";
import type { MembershipTable } from "./membership.js";
import type { Caller, VerifiedPrincipal } from "./principals.js";
import { advanceClock, type ReplicatedClock } from "./replicated-clock.js";
import { SearchIndexStore } from "./search-index-store.js";
import { SearchIndexer } from "./search-indexer.js";
import type { IndexChange } from "./search-protocol.js";
import { matchExpression, type SearchRequest, tenantToken } from "./search-query.js";
import { SnapshotCopier } from "./snapshot-copier.js";
import { inspectSnapshot, removeInterruptedInstall, replaceDatabaseFile } from "./snapshot-files.js";
import { StateWalCheckpoints, targetBytesWithin } from "./state-wal-checkpoints.js";
import { createStores, type Stores } from "./stores.js";

export interface StateMachineOptions {
  /** The database file; created with the schema when absent. */
  readonly path: string;
  /** Overrides of the canonical limits; must be identical on every voter. */
  readonly limits?: Partial<CanonicalLimits>;
  /**
   * WAL bytes each background checkpoint cycle aims at (default ~8 MiB, or less under a small WAL
   * limit); crash tests make it small so that their kills land inside cycles.
   */
  readonly checkpointBytes?: number;
  /** The state database's and the search index's page cache, mapping and WAL limit. */
  readonly sqlite?: Pick<StorageLimits, "state" | "search">;
  /**
   * Keys the stored API key hashes from the cluster secret; the state machine needs it for what was
   * hashed before: a database of schema 3 or older, and format-2 commands.
   */
  readonly keyHasher: ApiKeyHasher;
  /** Fault tests: called where the state's fsync runs (`state-sync`). */
  readonly faultHook?: FaultHook;
}

/** A stored command outcome, or what remains of it, as `GET /v1/commands/{commandId}` answers it. */
export type CommandOutcomeView = (CommandOutcome | ExpiredOutcome) & { readonly commandId: string };

/** One open database and everything prepared on it; replaced as a whole when a snapshot is installed. */
interface Session {
  readonly db: Database.Database;
  readonly stores: Stores;
  readonly runBatch: (entries: readonly Entry[]) => ApplyResult[];
  readonly commits: ApplyCommits;
}

/** Runs one command's handler; inside runBatch, so a savepoint is a nested transaction. */
type RunCommand = (ctx: ApplyContext, envelope: CommandEnvelope) => object;

/**
 * KeyLoad's deterministic state machine over SQLite. It applies committed entries in index order and
 * reads nothing but the entries, the database and the canonical limits: no clock, no randomness. The
 * time it uses follows the leaders' stamps on the entries, bounded so that no leader's wall clock can
 * move it far in one step or hold it back (see advanceClock); that clock is state, stored with the
 * applied index.
 */
export class StateMachine {
  /** This voter's configured canonical limits, which a leader proposes when the state keeps others. */
  readonly configuredLimits: CanonicalLimits;
  readonly limitsFingerprint: string;
  private session: Session;
  private position: AppliedPosition;
  private clock: ReplicatedClock;
  private readonly indexer: SearchIndexer;
  /** The tenants the search index follows: filled before the first apply, grown by searches. */
  private readonly searchedTenants = new Set<string>();
  private readonly snapshots = new SnapshotCopier();
  private readonly failureListeners: ((err: InternalError) => void)[] = [];
  private failure: InternalError | null = null;
  private readonly reader: CatalogReader;
  private readonly checkpoints: StateWalCheckpoints;

  private constructor(
    private readonly options: StateMachineOptions,
    limits: CanonicalLimits,
  ) {
    this.configuredLimits = limits;
    this.limitsFingerprint = limitsFingerprint(limits);
    removeInterruptedInstall(options.path);
    this.checkpoints = new StateWalCheckpoints(
      options.path,
      options.checkpointBytes ?? targetBytesWithin(this.sqlite.state.walLimitBytes),
    );
    this.checkpoints.onFailure((err) => this.failed(err));
    this.reader = new CatalogReader(options.path, this.sqlite.state);
    this.session = this.openSession();
    const meta = readMeta(this.session.db);
    this.position = { index: meta.applied_index, term: meta.applied_term };
    this.clock = storedClock(meta);
    const indexPath = `${options.path}.search`;
    const followed = SearchIndexStore.readTenants(indexPath);
    for (const { tenant } of followed) this.searchedTenants.add(tenant);
    this.indexer = new SearchIndexer(
      indexPath,
      this.position.index,
      {
        readChunk: (tenant, afterKey, limit, maxBytes) =>
          this.readIndexChunk(tenant, afterKey, limit, maxBytes),
        appliedIndex: () => this.position.index,
      },
      this.searchedTenants,
      followed.filter((t) => !t.complete).map((t) => t.tenant),
      this.sqlite.search,
    );
  }

  /**
   * The canonical limits entries apply under: those the state keeps (CanonicalLimitsStore), the same on
   * every voter at every index, whatever each voter's configuration says.
   */
  get limits(): CanonicalLimits {
    return this.session.stores.canonicalLimits.get() ?? this.configuredLimits;
  }

  /**
   * The fingerprint of the limits the state keeps, or null while it keeps none: a leader proposes its
   * configured ones unless this is their fingerprint (CanonicalLimitsProposer).
   */
  keptLimitsFingerprint(): string | null {
    const kept = this.session.stores.canonicalLimits.get();
    return kept === null ? null : limitsFingerprint(kept);
  }

  private get sqlite(): Pick<StorageLimits, "state" | "search"> {
    return this.options.sqlite ?? DEFAULT_STORAGE_LIMITS;
  }

  /** Opens (or creates) the state at `options.path`; the search index lives beside it, in `<path>.search`. */
  static open(options: StateMachineOptions): StateMachine {
    return new StateMachine(options, resolveLimits(options.limits));
  }

  /** The last applied entry; a driver replays the log from `index + 1` after opening. */
  applied(): AppliedPosition {
    return this.position;
  }

  /**
   * The applied index the database file holds, at most `applied().index`: applies commit in groups
   * (see ApplyCommits), and a crash of this process reopens the state here.
   */
  savedIndex(): number {
    return this.session.commits.saved();
  }

  apply(entry: Entry): ApplyResult {
    return this.applyBatch([entry])[0]!;
  }

  /**
   * Applies committed entries in one SQLite savepoint that also records the applied index, so the
   * database always holds a prefix of the log (batches commit in groups: see ApplyCommits). A command that refuses (a KeyLoadError) leaves no write
   * behind (it refuses before writing, or runs in a savepoint: see REFUSES_AFTER_WRITING) and commits
   * as its deterministic error outcome. Any other error (I/O, a bug) rolls back the whole batch and is
   * thrown as InternalError: committing it as an outcome could make this voter diverge from the others.
   */
  applyBatch(entries: readonly Entry[]): ApplyResult[] {
    const results: ApplyResult[] = [];
    let next = this.position.index + 1;
    let firstNew = entries.length;
    for (const [i, entry] of entries.entries()) {
      if (entry.index < next && firstNew === entries.length) {
        results.push({ type: "skipped", entryIndex: entry.index });
        continue;
      }
      if (entry.index !== next) {
        throw new InternalError(`entry ${entry.index} does not follow applied index ${next - 1}`, {
          reason: "ApplyGap",
        });
      }
      if (firstNew === entries.length) firstNew = i;
      next++;
    }
    if (firstNew === entries.length) return results;
    const saved = { position: this.position, clock: this.clock };
    const { stores, runBatch, commits } = this.session;
    commits.begin();
    try {
      results.push(...runBatch(entries.slice(firstNew)));
    } catch (error) {
      commits.batchFailed();
      stores.searchChanges.rollbackTo(0);
      stores.principals.forget();
      stores.outcomes.forget();
      this.position = saved.position;
      this.clock = saved.clock;
      throw new InternalError(`applying entries from ${entries[firstNew]!.index} failed`, {
        reason: "ApplyFailed",
        cause: error,
      });
    }
    commits.applied(this.position.index, entries.length - firstNew);
    this.indexer.submit(stores.searchChanges.take(), this.position.index);
    return results;
  }

  // Reads: pure queries of the applied state; a linearizable read waits until `applied()` reaches its
  // read index before calling one.

  getDocument(tenant: string, key: string): StoredDocument | undefined {
    return this.session.stores.documents.get(tenant, key);
  }

  /**
   * `GET /v1/catalog/{key}`'s answer as JSON text: a document may be tens of MiB, and parsing it to
   * serialize it again would hold the event loop for as long.
   */
  getDocumentJson(tenant: string, key: string): JsonText | undefined {
    return this.session.stores.documents.getJson(tenant, key);
  }

  // Bulk gets, queries, searches and traversals answer bounded pages as JSON text, read and built on
  // the read worker (see CatalogReader, CatalogQueries, GraphTraversal).

  /** `{"items":[...],"remaining"?:[keys]}` */
  bulkGet(tenant: string, keys: readonly string[]): Promise<JsonText> {
    return this.readPage({ kind: "bulkGet", tenant, keys });
  }

  /** `{"items":[...],"next"?}` */
  query(tenant: string, request: QueryRequest): Promise<JsonText> {
    return this.readPage({ kind: "query", tenant, request });
  }

  /** `{"hits":[...],"next"?}`: the index on its worker (see SearchIndexer) ranks, the read worker reads. */
  async search(tenant: string, request: SearchRequest): Promise<JsonText> {
    const match = matchExpression(tenantToken(tenant), request.query);
    const range = prefixRange(request.prefix);
    const hits = await this.indexer.query(tenant, match, range, request.limit, request.after);
    return this.readPage({ kind: "searchHits", tenant, hits, full: hits.length === request.limit });
  }

  /** `{"nodes":[...],"truncated"}` */
  traverse(tenant: string, request: TraverseRequest): Promise<JsonText> {
    return this.readPage({ kind: "traverse", tenant, request });
  }

  commandOutcome(tenant: string, commandId: string): CommandOutcomeView | undefined {
    const { outcomes } = this.session.stores;
    const stored = outcomes.get(tenant, commandId) ?? outcomes.expired(tenant, commandId);
    return stored === undefined ? undefined : { commandId, ...stored.outcome };
  }

  membership(tenant: string): MembershipTable {
    return this.session.stores.membership.read(tenant);
  }

  /** `GET /v1/dispatch/{channel}?after=N`: directives with a sequence number above `after`. */
  readDispatch(
    tenant: string,
    channel: string,
    after: number,
    limit: number = READ_LIMITS.defaultDispatchRead,
  ): Directive[] {
    return this.session.stores.dispatch.read(tenant, channel, after, {
      limit: Math.min(limit, READ_LIMITS.maxDispatchRead),
      maxBytes: READ_LIMITS.maxDispatchPageBytes,
      retentionMs: this.limits.directiveRetentionMs,
    });
  }

  /** Who holds the API key with this stored hash (ApiKeyHasher), or undefined. */
  authenticate(keyHash: string): VerifiedPrincipal | undefined {
    return this.session.stores.principals.authenticate(keyHash);
  }

  /**
   * Whether the applied state holds the cluster's bootstrap admin principal; until a
   * `system.bootstrapAdmin` entry applies, no key is known.
   */
  hasBootstrapAdmin(): boolean {
    return this.session.stores.principals.hasBootstrapPrincipal();
  }

  /** Why the applied catalog refuses `caller` what needs one of `roles` (see Principals.refusal). */
  authorizationRefusal(
    caller: Caller,
    roles: readonly Role[],
    action: string,
  ): AuthorizationRefusal | undefined {
    return this.session.stores.principals.refusal(caller, roles, action);
  }

  /**
   * Writes a consistent copy of the state to `targetPath` on a worker thread (SQLite online backup from
   * a read connection: applies go on meanwhile, the copy holds those committed when it began) and
   * returns the position the copy covers, read from the copy itself. The database is made durable up to
   * that position before this resolves, so the log may be compacted up to the returned index without
   * leaving the database relying on entries the log no longer holds.
   */
  async createSnapshot(targetPath: string): Promise<AppliedPosition> {
    this.session.commits.flush();
    try {
      // The worker fsyncs the live state after the copy (snapshot-worker.ts); a fault test fails it here.
      this.options.faultHook?.("state-sync");
    } catch (cause) {
      throw this.syncFailed(cause);
    }
    try {
      return await this.snapshots.copy(this.options.path, targetPath);
    } catch (error) {
      // The copy's own failures may be retried; a failed fsync of the live state may not (see
      // durablePosition), nor a copy whose pages show the live state damaged.
      if (error instanceof KeyLoadError && error.reason === "StateSyncFailed") throw this.syncFailed(error);
      if (error instanceof InternalError && error.reason === "CorruptState") throw this.failed(error);
      throw error;
    }
  }

  /**
   * Commits what applies hold open, then fsyncs the database and its WAL on the thread pool, and
   * returns the position the file then durably holds: a crash, power loss included, reopens the state
   * at least there, so the log may be compacted behind it with no copy of the state (the log's
   * snapshot point: docs/decisions/0021-lazy-snapshots.md). Applies go on meanwhile; the position is
   * the one committed when this was called.
   */
  async durablePosition(): Promise<AppliedPosition> {
    this.session.commits.flush();
    const position = this.position;
    const wal = `${this.options.path}-wal`;
    // Each commit so far is in the WAL or, checkpointed, in the database file. A failed fsync may have
    // dropped dirty pages that a retry would not write again (Linux reports the error once): the log
    // must never be compacted on the strength of it, so the voter stops.
    try {
      this.options.faultHook?.("state-sync");
      // The directory too: SQLite makes the WAL anew at each open, and a power loss could lose its
      // name with the commits in it.
      await Promise.all([
        existsSync(wal) ? fsyncPathAsync(wal) : undefined,
        fsyncPathAsync(this.options.path),
        fsyncPathAsync(dirname(this.options.path)),
      ]);
    } catch (cause) {
      throw this.syncFailed(cause);
    }
    return position;
  }

  private syncFailed(cause: unknown): InternalError {
    return this.failed(
      new InternalError("fsync of the applied state failed; the voter must restart", {
        reason: "StateSyncFailed",
        cause,
      }),
    );
  }

  /**
   * Calls `listener` once, when the state can no longer be trusted (a commit or an fsync of it failed):
   * the voter must stop at once, whatever met the failure.
   */
  onFailure(listener: (err: InternalError) => void): void {
    this.failureListeners.push(listener);
  }

  private failed(err: InternalError): InternalError {
    if (this.failure !== null) return this.failure;
    this.failure = err;
    for (const listener of this.failureListeners) listener(err);
    return err;
  }

  /**
   * Replaces the whole state with a snapshot file (validated first), atomically: a crash midway leaves
   * either the old state or the new one, and so does a failed copy, after which the old state is open
   * again. Returns the position the snapshot covers; apply continues after it.
   */
  restoreFromSnapshot(snapshotPath: string): AppliedPosition {
    const covered = inspectSnapshot(snapshotPath);
    this.session.commits.flush();
    this.checkpoints.quiesce();
    this.session.db.pragma("wal_checkpoint(TRUNCATE)");
    this.session.db.close();
    try {
      replaceDatabaseFile(this.options.path, snapshotPath);
    } finally {
      this.session = this.openSession();
      this.reader.reopen();
      const meta = readMeta(this.session.db);
      this.position = { index: meta.applied_index, term: meta.applied_term };
      this.clock = storedClock(meta);
      this.indexer.rebuild();
    }
    return covered;
  }

  /** Every table in a canonical order, for comparing voters' state (tests and diagnostics). */
  dump(): string {
    return dumpDatabase(this.session.db);
  }

  /** Stops the search worker (its index stays reusable when it had caught up) and closes the database. */
  async close(): Promise<void> {
    await this.snapshots.close();
    await this.reader.close();
    await this.indexer.close();
    await this.checkpoints.close();
    if (this.session.db.open) {
      this.session.commits.flush();
      this.session.db.close();
    }
  }

  /**
   * The read worker's connection sees only committed transactions, and applies commit in groups (see
   * ApplyCommits), so the open group is committed first: the caller has waited for its read index, so
   * everything applied now covers it, and the worker's read transaction, begun after this commit, sees
   * at least that. The reads that arrive between two applies share one commit; with no apply since the
   * last commit there is nothing to commit.
   */
  private readPage(read: CatalogRead): Promise<JsonText> {
    // After a failure the file may lack entries applied before it: nothing is read from it.
    if (this.failure !== null) throw this.failure;
    this.session.commits.flush();
    return this.reader.read(read);
  }

  private readIndexChunk(
    tenant: string,
    afterKey: string | null,
    limit: number,
    maxBytes: number,
  ): { changes: IndexChange[]; lastKey: string | null; done: boolean } {
    type Row = { id: number; key: string; value: string };
    const rows =
      afterKey === null
        ? this.session.db
            .prepare<[string], Row>(
              "SELECT id, key, value FROM documents WHERE tenant = ? AND value IS NOT NULL ORDER BY key",
            )
            .iterate(tenant)
        : this.session.db
            .prepare<[string, string], Row>(
              "SELECT id, key, value FROM documents WHERE tenant = ? AND key > ? AND value IS NOT NULL ORDER BY key",
            )
            .iterate(tenant, afterKey);
    const changes: IndexChange[] = [];
    let bytes = 0;
    let lastKey = afterKey;
    let read = 0;
    const indexed = this.searchedTenants.has(tenant);
    for (const row of rows) {
      if (read === limit || (read > 0 && bytes >= maxBytes)) {
        // Stopping early ends the statement, which `iterate` leaves open otherwise.
        rows.return?.();
        return { changes, lastKey, done: false };
      }
      read++;
      bytes += row.value.length;
      lastKey = row.key;
      if (indexed)
        changes.push({
          id: row.id,
          token: tenantToken(tenant),
          key: row.key,
          text: documentText(JSON.parse(row.value)),
        });
    }
    return { changes, lastKey, done: true };
  }

  private openSession(): Session {
    const db = openDatabase(this.options.path, this.sqlite.state, this.options.keyHasher);
    this.checkpoints.usePageSize(pageBytesOf(db));
    const stores = createStores(db, this.searchedTenants, this.options.keyHasher);
    const writeMeta = db.prepare<[number, number, number, number, number]>(
      "UPDATE meta SET applied_index = ?, applied_term = ?, clock_ms = ?, clock_term = ?, clock_monotonic_ms = ? WHERE id = 1",
    );
    const inSavepoint = db.transaction((ctx: ApplyContext, envelope: CommandEnvelope) =>
      COMMAND_HANDLERS[envelope.kind](ctx, envelope, stores),
    );
    const runCommand: RunCommand = (ctx, envelope) =>
      REFUSES_AFTER_WRITING.has(envelope.kind)
        ? inSavepoint(ctx, envelope)
        : COMMAND_HANDLERS[envelope.kind](ctx, envelope, stores);
    const runBatch = db.transaction((entries: readonly Entry[]) => {
      // A batch rolled back may have changed the limits it read.
      stores.canonicalLimits.forget();
      const results = entries.map((entry) => this.applyEntry(entry, stores, runCommand));
      const last = entries[entries.length - 1]!;
      const { nowMs, term, monotonicMs } = this.clock;
      writeMeta.run(last.index, last.term, nowMs, term, monotonicMs);
      this.position = { index: last.index, term: last.term };
      return results;
    });
    return {
      db,
      stores,
      runBatch,
      commits: new ApplyCommits(
        db,
        readMeta(db).applied_index,
        (d) => this.checkpoints.afterCommit(d),
        (err) => this.failed(err),
      ),
    };
  }

  private applyEntry(entry: Entry, stores: Stores, runCommand: RunCommand): ApplyResult {
    // A membership change is the Raft core's; the state machine only moves past it.
    if (entry.type !== "normal") return { type: "noop", entryIndex: entry.index };
    let envelope: CommandEnvelope;
    try {
      envelope = decodeCommand(entry.data);
    } catch (error) {
      return this.unstoredRefusal(entry, null, null, error);
    }
    this.clock = advanceClock(this.clock, {
      term: entry.term,
      wallMs: envelope.timestampMs,
      monotonicMs: envelope.monotonicMs,
      ...(envelope.quorumWallMs === undefined ? {} : { quorumWallMs: envelope.quorumWallMs }),
    });
    const { tenant, commandId } = envelope;
    const ctx: ApplyContext = {
      index: entry.index,
      nowMs: this.clock.nowMs,
      tenant,
      principal: envelope.principal,
      keyId: envelope.keyId,
      commandId,
      plainPayload: !envelope.payload.includes("\\"),
      limits: this.limits,
    };
    const denied = stores.principals.commandRefusal(ctx, envelope.kind);
    const digest = commandDigest(envelope);
    const stored = stores.outcomes.get(tenant, commandId) ?? stores.outcomes.expired(tenant, commandId);
    if (stored !== undefined) {
      // A caller that may no longer send the command learns nothing of the ID's outcome, which stays.
      if (denied !== undefined) return this.unstoredRefusal(entry, tenant, commandId, denied);
      const previous = stored.outcome;
      if (stored.digest.equals(digest)) {
        if (previous.status !== "expired") {
          return {
            type: "command",
            entryIndex: entry.index,
            tenant,
            commandId,
            duplicate: true,
            outcome: previous,
          };
        }
        // The result is gone but the command did apply: refused, so it never applies twice.
        const { index, failed, errorCode } = previous;
        const ended = failed ? `was refused (${errorCode})` : "committed";
        const expired = new CommandIdConflictError(
          `command ${commandId} ${ended} at index ${index}; its full outcome has expired`,
          { reason: "OutcomeExpired" },
        );
        return this.unstoredRefusal(entry, tenant, commandId, expired, index);
      }
      const conflict = new CommandIdConflictError(
        `command ${commandId} was committed with another route or body`,
        {
          reason: "DigestMismatch",
        },
      );
      return this.unstoredRefusal(entry, tenant, commandId, conflict);
    }
    let outcome: CommandOutcome;
    const searchMark = stores.searchChanges.mark();
    try {
      // Refused like any command that cannot apply: the outcome is stored under the ID and answered.
      if (denied !== undefined) throw denied;
      const payloadBytes = Buffer.byteLength(envelope.payload, "utf8");
      // The voters' own commands are not bounded by a limit they may be there to raise.
      if (payloadBytes > this.limits.maxMutationBytes && !isSystemKind(envelope.kind)) {
        throw new InvalidArgumentError(
          `the payload of ${payloadBytes} bytes exceeds ${this.limits.maxMutationBytes}`,
          {
            reason: "MutationTooLarge",
          },
        );
      }
      outcome = { status: "committed", index: entry.index, result: runCommand(ctx, envelope) };
    } catch (error) {
      if (!(error instanceof KeyLoadError)) throw error;
      stores.searchChanges.rollbackTo(searchMark);
      outcome = {
        status: "failed",
        index: entry.index,
        error: { code: error.code, reason: error.reason, message: error.message },
      };
    }
    stores.outcomes.record(tenant, commandId, digest, ctx.nowMs, outcome, this.limits);
    return { type: "command", entryIndex: entry.index, tenant, commandId, duplicate: false, outcome };
  }

  /** `index`: the entry the refusal names, this one unless it is about the ID's first application. */
  private unstoredRefusal(
    entry: Entry,
    tenant: string | null,
    commandId: string | null,
    error: unknown,
    index: number = entry.index,
  ): ApplyResult {
    if (!(error instanceof KeyLoadError)) throw error;
    return {
      type: "command",
      entryIndex: entry.index,
      tenant,
      commandId,
      duplicate: false,
      outcome: {
        status: "failed",
        index,
        error: { code: error.code, reason: error.reason, message: error.message },
      },
    };
  }
}

function storedClock(meta: MetaRow): ReplicatedClock {
  return { nowMs: meta.clock_ms, term: meta.clock_term, monotonicMs: meta.clock_monotonic_ms };
}
