import type Database from "better-sqlite3";
import { checkText } from "../requests/identifiers.js";
import type { ApplyContext } from "./apply-context.js";
import { invalid, type JsonObject, requireString } from "./json-body.js";
import { checkJsonValue } from "./json-value.js";

export interface Directive {
  readonly sequence: number;
  readonly directive: string;
  /** Null when the directive carried no data. */
  readonly data: unknown;
  readonly atMs: number;
}

export interface DirectiveWrite {
  readonly directive: string;
  readonly data: unknown;
}

/** Validates a `POST /v1/dispatch/{channel}` body: `{"directive","data"?}`. */
export function parseDirective(body: JsonObject): DirectiveWrite {
  const directive = checkText("directive", requireString(body, "directive"), 256);
  const data = body.data ?? null;
  checkJsonValue(data);
  return { directive, data };
}

/** At most this many directives expire per append, which adds one: a backlog shrinks by three an append. */
const EXPIRY_BATCH = 4;

/**
 * Append-only control channels: each directive gets the channel's next sequence number, from 1. A
 * directive older than `directiveRetentionMs` by the applied clock is read by no one; the channel's next
 * append removes it, and any append removes a few of any channel's (an idle channel's would stay for
 * good otherwise). A reader asking `after` one gets the oldest kept (the channel's sequence numbers go on
 * regardless, kept in its channel row).
 */
export class Dispatch {
  private readonly bump: Database.Statement<[string, string], { last_seq: number }>;
  private readonly insert: Database.Statement<
    [string, string, number, string, string | null, number, number]
  >;
  private readonly after: Database.Statement<
    [string, string, number, number, number],
    { seq: number; directive: string; data: string | null; at_ms: number }
  >;
  private readonly expire: Database.Statement<[{ tenant: string; channel: string; timeBound: number }]>;
  private readonly expireAnywhere: Database.Statement<[number]>;

  constructor(db: Database.Database) {
    this.bump = db.prepare(
      `INSERT INTO dispatch_channels (tenant, channel, last_seq) VALUES (?, ?, 1)
       ON CONFLICT (tenant, channel) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`,
    );
    this.insert = db.prepare(
      `INSERT INTO directives (tenant, channel, seq, directive, data, at_ms, entry_index)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.after = db.prepare(
      `SELECT seq, directive, data, at_ms FROM directives
       WHERE tenant = ? AND channel = ? AND seq > ?
         AND at_ms >= (SELECT clock_ms FROM meta WHERE id = 1) - ?
       ORDER BY seq LIMIT ?`,
    );
    // Any channel's, oldest first: one no one appends to any more would keep its rows for good.
    this.expireAnywhere = db.prepare(
      `DELETE FROM directives WHERE (tenant, channel, seq) IN
         (SELECT tenant, channel, seq FROM directives WHERE at_ms < ?
          ORDER BY at_ms, tenant, channel, seq LIMIT ${EXPIRY_BATCH})`,
    );
    // Entry time never runs backwards, so the expired directives are the channel's first few.
    this.expire = db.prepare(
      `DELETE FROM directives WHERE tenant = @tenant AND channel = @channel AND at_ms < @timeBound
       AND seq IN (SELECT seq FROM directives WHERE tenant = @tenant AND channel = @channel
                   ORDER BY seq LIMIT ${EXPIRY_BATCH})`,
    );
  }

  append(ctx: ApplyContext, channel: string, write: DirectiveWrite): { channel: string; sequence: number } {
    const sequence = this.bump.get(ctx.tenant, channel)!.last_seq;
    const data = write.data === null ? null : JSON.stringify(write.data);
    this.insert.run(ctx.tenant, channel, sequence, write.directive, data, ctx.nowMs, ctx.index);
    const timeBound = ctx.nowMs - ctx.limits.directiveRetentionMs;
    this.expire.run({ tenant: ctx.tenant, channel, timeBound });
    this.expireAnywhere.run(timeBound);
    return { channel, sequence };
  }

  /**
   * Directives with a sequence number above `after`, oldest first: at most `limit`, and no more past
   * `maxBytes` of their stored data and names (the first always goes). A reader goes on after the last.
   */
  read(
    tenant: string,
    channel: string,
    after: number,
    limits: { readonly limit: number; readonly maxBytes: number; readonly retentionMs: number },
  ): Directive[] {
    if (!Number.isSafeInteger(after) || after < 0) throw invalid("after must be a non-negative integer");
    const directives: Directive[] = [];
    let bytes = 0;
    for (const row of this.after.iterate(tenant, channel, after, limits.retentionMs, limits.limit)) {
      bytes += Buffer.byteLength(row.directive) + (row.data === null ? 0 : Buffer.byteLength(row.data));
      if (directives.length > 0 && bytes > limits.maxBytes) break;
      directives.push({
        sequence: row.seq,
        directive: row.directive,
        data: row.data === null ? null : JSON.parse(row.data),
        atMs: row.at_ms,
      });
    }
    return directives;
  }
}
