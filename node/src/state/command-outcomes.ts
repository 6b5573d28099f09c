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

interface OutcomeRow {
  entry_index: number;
  digest: Buffer;
  failed: number;
  body: string;
}

/** At most this many outcomes expire per command, so expiry never makes one apply slow. */
const EXPIRY_BATCH = 8;

/** The row expiry would look at first; null when the table is empty. */
interface OldestOutcome {
  readonly seq: number;
  readonly atMs: number;
}

/**
 * Command ID → outcome, per tenant. An outcome stays while it is younger than `outcomeRetentionMs` of entry
 * time OR among the last `outcomeRetentionCommands` commands; only outcomes past both bounds expire.
 * Expiry runs inside applies and reads only entry time and counts, so every voter expires the same rows.
 */
export class CommandOutcomes {
  private readonly find: Database.Statement<[string, string], OutcomeRow>;
  private readonly insert: Database.Statement<[string, string, number, Buffer, number, number, string]>;
  private readonly expire: Database.Statement<[number, number]>;
  private readonly first: Database.Statement<[], { seq: number; at_ms: number }>;
  /**
   * The oldest row as the database holds it, undefined when not known. Until the oldest outcome is past
   * both bounds nothing is (both grow with seq), and the DELETE, about a tenth of a catalog put's apply,
   * is skipped: it expires the same rows as before, only without asking when the answer is known.
   */
  private oldest: OldestOutcome | null | undefined;

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
    this.expire = db.prepare(
      `DELETE FROM command_outcomes
       WHERE seq IN (SELECT seq FROM command_outcomes ORDER BY seq LIMIT ${EXPIRY_BATCH}) AND seq <= ? AND at_ms < ?`,
    );
    this.first = db.prepare("SELECT seq, at_ms FROM command_outcomes ORDER BY seq LIMIT 1");
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
      this.expire.run(seqBound, timeBound);
      this.oldest = undefined;
    } else {
      this.oldest = oldest;
    }
  }

  /** After a rollback, which may have undone inserts and expiries: the oldest row is read again. */
  forget(): void {
    this.oldest = undefined;
  }
}
