import type Database from "better-sqlite3";
import { type CanonicalLimits, limitsText, parseLimitsText } from "./limits.js";

/**
 * The canonical limits the state machine applies entries under, kept in the state itself: every voter
 * applies an entry under the limits its state held at that entry, whatever its configuration says now.
 * A voter that restarts with other limits configured so replays its log under the limits of the time,
 * and the new ones take effect at the index of the `system.canonicalLimits` entry a leader proposes
 * (voter/canonical-limits-proposer.ts), on every voter alike.
 */
export class CanonicalLimitsStore {
  private readonly select: Database.Statement<[], { limits: string }>;
  private readonly upsert: Database.Statement<[string, number]>;
  /** What the row holds, read at most once a batch (forget); undefined: not read yet. */
  private cached: CanonicalLimits | null | undefined;

  constructor(db: Database.Database) {
    this.select = db.prepare("SELECT limits FROM canonical_limits WHERE id = 1");
    this.upsert = db.prepare(
      `INSERT INTO canonical_limits (id, limits, entry_index) VALUES (1, ?, ?)
       ON CONFLICT (id) DO UPDATE SET limits = excluded.limits, entry_index = excluded.entry_index`,
    );
  }

  /**
   * The limits kept, or null while no `system.canonicalLimits` entry has applied (a new cluster's first
   * entries, or a state from before limits were kept): the voter's configured limits apply then.
   */
  get(): CanonicalLimits | null {
    if (this.cached === undefined) {
      const row = this.select.get();
      this.cached = row === undefined ? null : parseLimitsText(row.limits);
    }
    return this.cached;
  }

  /** Keeps `limits` from the entry at `entryIndex` on. */
  set(limits: CanonicalLimits, entryIndex: number): void {
    // Read again at the next use: a savepoint rolled back after this write leaves the old row.
    this.cached = undefined;
    this.upsert.run(limitsText(limits), entryIndex);
  }

  /** Forgets what was read: the next batch reads the row again (a batch rolled back may have written it). */
  forget(): void {
    this.cached = undefined;
  }
}
