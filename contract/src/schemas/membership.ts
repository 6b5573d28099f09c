import { Type } from "@sinclair/typebox";
import { constant, enumOf, integer, objectOfShapes, orNull, text, type Wire } from "./json-schema.js";
import { written } from "./written.js";

/** A tenant's membership table (Orleans' cluster membership): rows written with etags, read whole. */

/** Orleans' silo statuses. */
export const MEMBER_STATUSES = ["created", "joining", "active", "shuttingDown", "stopping", "dead"] as const;
export type MemberStatus = (typeof MEMBER_STATUSES)[number];

/**
 * A membership row write: inserts when `etag` is absent, else updates only if it matches; `tableVersion`,
 * when given, must equal the table's. `{iAmAlive: true}` refreshes the row's I-am-alive time alone.
 */
export const MemberWriteSchema = objectOfShapes(
  [
    Type.Object({ iAmAlive: constant(true) }),
    Type.Object({
      status: enumOf(MEMBER_STATUSES),
      address: text(1, 512),
      etag: Type.Optional(orNull(Type.String())),
      tableVersion: Type.Optional(orNull(integer(0))),
    }),
  ],
  'A row write {"status","address","etag"?,"tableVersion"?} or {"iAmAlive":true}',
);
export type MemberWrite = Wire<typeof MemberWriteSchema>;

const memberFields = {
  memberId: Type.String(),
  status: enumOf(MEMBER_STATUSES),
  address: Type.String(),
  etag: Type.String(),
  iAmAliveMs: integer(0, Number.MAX_SAFE_INTEGER, "Entry time of the row's last I-am-alive"),
};

/** One row of a tenant's membership table. */
export const MemberSchema = Type.Object(memberFields);
export type Member = Wire<typeof MemberSchema>;

export const PutMemberResultSchema = written({ ...memberFields, tableVersion: integer(0) });
export type PutMemberResult = Wire<typeof PutMemberResultSchema>;

export const MembershipTableSchema = Type.Object({
  tableVersion: integer(0),
  members: Type.Array(MemberSchema),
});
export type MembershipTable = Wire<typeof MembershipTableSchema>;
