import type { ErrorCode } from "@keyload/contract";
import type Database from "better-sqlite3";
import type { CanonicalLimits } from "./limits.js";

/** A deterministic refusal, as stored and as answered: the contract's error body without `details`. */
export interface OutcomeError {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly message: string;
}

/** What a command ID resolved to. `index` is the entry that applied it, also for later duplicates. */
export type CommandOutcome =
  | { readonly status: "committed"; readonly index: number; readonly result: unknown }
  | { readonly status: "failed"; readonly index: number; readonly error: OutcomeError };

export interface StoredOutcome {
  readonly digest: Buffer;
  readonly outcome: CommandOutcome;
}

/**
 * What remains of an outcome past its full window, until `dedupeRetentionMs` after its entry: enough to
 * refuse a late retry instead of applying it again, and to say how the command ended.
 */
export interface ExpiredOutcome {
  readonly status: "expired";
  readonly index: number;
  readonly failed: boolean;
  /** The code of the refusal it committed as; null when it committed. */
  readonly errorCode: ErrorCode | null;
}

export interface StoredExpiredOutcome {
  readonly digest: Buffer;
  readonly outcome: ExpiredOutcome;
}

interface OutcomeRow {
  entry_index: number;
  digest: Buffer;
  failed: number;
  body: string;
}

/**
 * At most this many outcomes expire, and as many dedupe records, per command, so expiry never makes one
 * apply slow; each command adds one of each at most, so a backlog shrinks by up to seven per command.
 */
const EXPIRY_BATCH = 8;

interface ExpiryBounds {
  readonly seqBound: number;
  readonly timeBound: number;
}

/** The row expiry would look at first; null when the table is empty. */
interface OldestOutcome {
  readonly seq: number;
  readonly atMs: number;
}

/**
 * Command ID → outcome, per tenant. An outcome stays while it is younger than `outcomeRetentionMs` of entry
 * time OR among the last `outcomeRetentionCommands` commands; only outcomes past both bounds expire, into
 * a compact dedupe record (digest, index, error code) that stays until `dedupeRetentionMs` after the
 * entry. Expiry runs inside applies and reads only entry time and counts, so every voter expires the
 * same rows.
 */
export class CommandOutcomes {
  private readonly find: Database.Statement<[string, string], OutcomeRow>;
  private readonly insert: Database.Statement<[string, string, number, Buffer, number, number, string]>;
  private readonly expire: Database.Statement<[ExpiryBounds]>;
  private readonly first: Database.Statement<[], { seq: number; at_ms: number }>;
  private readonly findExpired: Database.Statement<
    [string, string],
    { entry_index: number; digest: Buffer; error_code: ErrorCode | null }
  >;
  private readonly compact: Database.Statement<[ExpiryBounds]>;
  private readonly expireDedupe: Database.Statement<[number]>;
  private readonly firstDedupe: Database.Statement<[], { at_ms: number }>;
  /**
   * The oldest row as the database holds it, undefined when not known. Until the oldest outcome is past
   * both bounds nothing is (both grow with seq), and the DELETE, about a tenth of a catalog put's apply,
   * is skipped: it expires the same rows as before, only without asking when the answer is known.
   */
  private oldest: OldestOutcome | null | undefined;
  /** The oldest dedupe record's entry time, null when there is none, undefined when not known. */
  private oldestDedupeMs: number | null | undefined;

  constructor(db: Database.Database) {
    this.find = db.prepare(
      "SELECT entry_index, digest, failed, body FROM command_outcomes WHERE tenant = ? AND command_id = ?",
    );
    this.insert = db.prepare(
      `INSERT INTO command_outcomes (tenant, command_id, entry_index, digest, at_ms, failed, body)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    // Entry time never runs backwards, so `at_ms` grows with `seq` and the expirable rows are always the
    // oldest few: looking at the first EXPIRY_BATCH rows by seq is enough.
    const expirable = `seq IN (SELECT seq FROM command_outcomes ORDER BY seq LIMIT ${EXPIRY_BATCH}) AND seq <= @seqBound AND at_ms < @timeBound`;
    this.expire = db.prepare(`DELETE FROM command_outcomes WHERE ${expirable}`);
    this.first = db.prepare("SELECT seq, at_ms FROM command_outcomes ORDER BY seq LIMIT 1");
    // In seq order, so dedupe records keep the outcomes' order and their times grow with their seq too.
    this.compact = db.prepare(
      `INSERT INTO command_dedupe (tenant, command_id, entry_index, digest, at_ms, error_code)
       SELECT tenant, command_id, entry_index, digest, at_ms,
              CASE WHEN failed = 1 THEN json_extract(body, '$.code') END
       FROM command_outcomes WHERE ${expirable} ORDER BY seq`,
    );
    this.findExpired = db.prepare(
      "SELECT entry_index, digest, error_code FROM command_dedupe WHERE tenant = ? AND command_id = ?",
    );
    this.expireDedupe = db.prepare(
      `DELETE FROM command_dedupe
       WHERE seq IN (SELECT seq FROM command_dedupe ORDER BY seq LIMIT ${EXPIRY_BATCH}) AND at_ms < ?`,
    );
    this.firstDedupe = db.prepare("SELECT at_ms FROM command_dedupe ORDER BY seq LIMIT 1");
  }

  get(tenant: string, commandId: string): StoredOutcome | undefined {
    const row = this.find.get(tenant, commandId);
    if (row === undefined) return undefined;
    const body: unknown = JSON.parse(row.body);
    const outcome: CommandOutcome =
      row.failed === 1
        ? { status: "failed", index: row.entry_index, error: body as OutcomeError }
        : { status: "committed", index: row.entry_index, result: body };
    return { digest: row.digest, outcome };
  }

  /** The dedupe record of an outcome past its full window, if the ID has one. */
  expired(tenant: string, commandId: string): StoredExpiredOutcome | undefined {
    const row = this.findExpired.get(tenant, commandId);
    if (row === undefined) return undefined;
    const failed = row.error_code !== null;
    return {
      digest: row.digest,
      outcome: { status: "expired", index: row.entry_index, failed, errorCode: row.error_code },
    };
  }

  /** Stores an outcome, then expires what the retention rule lets go; returns nothing to undo. */
  record(
    tenant: string,
    commandId: string,
    digest: Buffer,
    atMs: number,
    outcome: CommandOutcome,
    limits: CanonicalLimits,
  ): void {
    const failed = outcome.status === "failed";
    const body = JSON.stringify(failed ? outcome.error : outcome.result);
    const seq = Number(
      this.insert.run(tenant, commandId, outcome.index, digest, atMs, failed ? 1 : 0, body).lastInsertRowid,
    );
    if (this.oldest === undefined) {
      const row = this.first.get();
      this.oldest = row === undefined ? null : { seq: row.seq, atMs: row.at_ms };
    }
    const oldest = this.oldest ?? { seq, atMs };
    const seqBound = seq - limits.outcomeRetentionCommands;
    const timeBound = atMs - limits.outcomeRetentionMs;
    if (oldest.seq <= seqBound && oldest.atMs < timeBound) {
      this.compact.run({ seqBound, timeBound });
      this.expire.run({ seqBound, timeBound });
      this.oldest = undefined;
      this.oldestDedupeMs = undefined;
    } else {
      this.oldest = oldest;
    }
    this.expireDedupeRecords(atMs - limits.dedupeRetentionMs);
  }

  /** After a rollback, which may have undone inserts and expiries: the oldest rows are read again. */
  forget(): void {
    this.oldest = undefined;
    this.oldestDedupeMs = undefined;
  }

  private expireDedupeRecords(timeBound: number): void {
    if (this.oldestDedupeMs === undefined) this.oldestDedupeMs = this.firstDedupe.get()?.at_ms ?? null;
    if (this.oldestDedupeMs === null || this.oldestDedupeMs >= timeBound) return;
    this.expireDedupe.run(timeBound);
    this.oldestDedupeMs = undefined;
  }
}
