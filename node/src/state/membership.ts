import {
  FailedPreconditionError,
  MEMBER_STATUSES,
  type Member,
  type MemberStatus,
  NotFoundError,
} from "@keyload/contract";
import type Database from "better-sqlite3";
import { checkText } from "../requests/identifiers.js";
import { type ApplyContext, deriveToken } from "./apply-context.js";
import { invalid, type JsonObject, optionalInteger, optionalString } from "./json-body.js";

export interface MembershipTable {
  readonly tableVersion: number;
  readonly members: Member[];
}

/**
 * A `PUT /v1/membership/{memberId}` body. A write (`{"status","address","etag"?,"tableVersion"?}`) inserts
 * when `etag` is absent and otherwise updates only if `etag` matches; `tableVersion`, when given, must
 * equal the table's version. `{"iAmAlive":true}` refreshes the row's I-am-alive time alone, as Orleans
 * does, without an etag and without bumping the table version.
 */
export type MembershipWrite =
  | {
      readonly type: "write";
      readonly status: MemberStatus;
      readonly address: string;
      readonly etag: string | undefined;
      readonly tableVersion: number | undefined;
    }
  | { readonly type: "iAmAlive" };

export function parseMembershipWrite(body: JsonObject): MembershipWrite {
  if (body.iAmAlive === true) return { type: "iAmAlive" };
  const status = optionalString(body, "status");
  if (status === undefined || !(MEMBER_STATUSES as readonly string[]).includes(status)) {
    throw invalid(`status is one of ${MEMBER_STATUSES.join(", ")}`);
  }
  const address = optionalString(body, "address");
  if (address === undefined) throw invalid("address is required");
  return {
    type: "write",
    status: status as MemberStatus,
    address: checkText("address", address, 512),
    etag: optionalString(body, "etag"),
    tableVersion: optionalInteger(body, "tableVersion", 0, Number.MAX_SAFE_INTEGER),
  };
}

interface MemberRow {
  member_id: string;
  status: MemberStatus;
  address: string;
  etag: string;
  i_am_alive_ms: number;
}

/** At most this many defunct rows are purged per write, which adds at most one: a backlog shrinks. */
const PURGE_BATCH = 4;

/** An Orleans-style membership table per tenant: etag-checked rows and a table version. */
export class Membership {
  private readonly find: Database.Statement<[string, string], MemberRow>;
  private readonly list: Database.Statement<[string], MemberRow>;
  private readonly version: Database.Statement<[string], { version: number }>;
  private readonly bumpVersion: Database.Statement<[string], { version: number }>;
  private readonly upsert: Database.Statement<[string, string, string, string, string, number, number]>;
  private readonly alive: Database.Statement<[number, number, string, string]>;
  private readonly purgeDefunct: Database.Statement<[{ tenant: string; timeBound: number; written: string }]>;

  constructor(db: Database.Database) {
    const columns = "member_id, status, address, etag, i_am_alive_ms";
    this.find = db.prepare(`SELECT ${columns} FROM members WHERE tenant = ? AND member_id = ?`);
    this.list = db.prepare(`SELECT ${columns} FROM members WHERE tenant = ? ORDER BY member_id`);
    this.version = db.prepare("SELECT version FROM membership_versions WHERE tenant = ?");
    this.bumpVersion = db.prepare(
      `INSERT INTO membership_versions (tenant, version) VALUES (?, 1)
       ON CONFLICT (tenant) DO UPDATE SET version = version + 1 RETURNING version`,
    );
    this.upsert = db.prepare(
      `INSERT INTO members (tenant, member_id, status, address, etag, i_am_alive_ms, updated_index)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (tenant, member_id) DO UPDATE SET status = excluded.status, address = excluded.address,
       etag = excluded.etag, i_am_alive_ms = excluded.i_am_alive_ms, updated_index = excluded.updated_index`,
    );
    this.alive = db.prepare(
      "UPDATE members SET i_am_alive_ms = ?, updated_index = ? WHERE tenant = ? AND member_id = ?",
    );
    // Never the row being written: a caller that read it, however old, may write it with its etag.
    this.purgeDefunct = db.prepare(
      `DELETE FROM members WHERE tenant = @tenant AND member_id IN (SELECT member_id FROM members
       WHERE tenant = @tenant AND status = 'dead' AND i_am_alive_ms < @timeBound AND member_id <> @written
       ORDER BY member_id LIMIT ${PURGE_BATCH})`,
    );
  }

  put(ctx: ApplyContext, memberId: string, write: MembershipWrite): Member & { tableVersion: number } {
    // A silo that restarts joins as a new row, and no route deletes one: the dead ones are purged here,
    // as Orleans's cleanup of defunct silos does, so the table a silo reads does not grow for good.
    this.purgeDefunct.run({
      tenant: ctx.tenant,
      timeBound: ctx.nowMs - ctx.limits.defunctMemberRetentionMs,
      written: memberId,
    });
    const row = this.find.get(ctx.tenant, memberId);
    if (write.type === "iAmAlive") {
      if (row === undefined) throw new NotFoundError(`no member ${memberId}`, { reason: "MemberNotFound" });
      this.alive.run(ctx.nowMs, ctx.index, ctx.tenant, memberId);
      return { ...toMember(row), iAmAliveMs: ctx.nowMs, tableVersion: this.tableVersion(ctx.tenant) };
    }
    if (write.tableVersion !== undefined && write.tableVersion !== this.tableVersion(ctx.tenant)) {
      throw new FailedPreconditionError(`the membership table is not at version ${write.tableVersion}`, {
        reason: "TableVersionMismatch",
      });
    }
    if (row === undefined ? write.etag !== undefined : write.etag !== row.etag) {
      throw new FailedPreconditionError(
        row === undefined ? `no member ${memberId} to update` : `member ${memberId} has another etag`,
        { reason: "EtagMismatch" },
      );
    }
    const etag = deriveToken(ctx, "etag").slice(0, 16);
    this.upsert.run(ctx.tenant, memberId, write.status, write.address, etag, ctx.nowMs, ctx.index);
    const tableVersion = this.bumpVersion.get(ctx.tenant)!.version;
    return {
      memberId,
      status: write.status,
      address: write.address,
      etag,
      iAmAliveMs: ctx.nowMs,
      tableVersion,
    };
  }

  read(tenant: string): MembershipTable {
    return { tableVersion: this.tableVersion(tenant), members: this.list.all(tenant).map(toMember) };
  }

  private tableVersion(tenant: string): number {
    return this.version.get(tenant)?.version ?? 0;
  }
}

function toMember(row: MemberRow): Member {
  return {
    memberId: row.member_id,
    status: row.status,
    address: row.address,
    etag: row.etag,
    iAmAliveMs: row.i_am_alive_ms,
  };
}
