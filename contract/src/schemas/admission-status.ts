import { type TInteger, Type } from "@sinclair/typebox";
import { enumOf, integer, orNull, type Wire } from "./json-schema.js";

/** `GET /v1/admin/admission`: one voter's admission limits and current usage (contract section 7). */

/** An object of the counters `names`, each a non-negative integer. */
function counters<const N extends string>(names: readonly N[], description?: string) {
  const properties = Object.fromEntries(names.map((name) => [name, integer(0)])) as Record<N, TInteger>;
  return Type.Object(properties, description === undefined ? undefined : { description });
}

const lane = enumOf(["data", "control"]);

export const CommandLimitsSchema = counters(
  [
    "maxCommands",
    "maxRetainedBytes",
    "maxCommandsPerTenant",
    "maxCommandsPerPrincipal",
    "controlMaxCommands",
    "controlMaxRetainedBytes",
    "controlMaxCommandsPerTenant",
    "controlMaxCommandsPerPrincipal",
    "controlMaxPayloadBytes",
    "maxConsecutiveControl",
  ],
  "Every CommandAdmission property, camelCase",
);
export type CommandLimits = Wire<typeof CommandLimitsSchema>;

export const HttpLimitsSchema = counters(
  [
    "maxRequests",
    "maxModeledBytes",
    "maxRequestsPerTenant",
    "maxRequestsPerPrincipal",
    "heavyReadBytes",
    "dataRequestBytes",
    "maxDataBodyBytes",
    "controlMaxRequests",
    "controlMaxModeledBytes",
    "controlMaxRequestsPerTenant",
    "controlMaxRequestsPerPrincipal",
    "maxControlBodyBytes",
  ],
  "Every HttpAdmission property, camelCase",
);
export type HttpLimits = Wire<typeof HttpLimitsSchema>;

export const CommandLaneUsageSchema = counters(["commands", "retainedBytes", "queued", "active"]);
export type CommandLaneUsage = Wire<typeof CommandLaneUsageSchema>;

export const HttpPoolUsageSchema = counters(["requests", "modeledBytes"]);
export type HttpPoolUsage = Wire<typeof HttpPoolUsageSchema>;

/**
 * The voter's free disk against its floors: below `softFloorBytes` data commands are refused
 * (`DiskFloor`), below `hardFloorBytes` every write. The measured fields are null until measured.
 */
export const DiskStatusSchema = Type.Object({
  freeBytes: orNull(integer(0), {
    description: "Free on the data dir's filesystem (null: not measured yet)",
  }),
  reserveBytes: orNull(integer(0), { description: "What one more snapshot of the state takes" }),
  softFloorBytes: integer(0, Number.MAX_SAFE_INTEGER, "Below it, data commands are refused (DiskFloor)"),
  hardFloorBytes: integer(0, Number.MAX_SAFE_INTEGER, "Below it, every client write is refused"),
  state: enumOf(["ok", "soft", "hard"]),
});
export type DiskStatus = Wire<typeof DiskStatusSchema>;

/** One SQLite database's native limits, in bytes. */
export const SqliteLimitsSchema = counters(["cacheBytes", "mmapBytes", "walLimitBytes"]);
export type SqliteLimits = Wire<typeof SqliteLimitsSchema>;

export const AdmissionStatusSchema = Type.Object({
  nodeId: Type.String(),
  commandAdmission: Type.Object({
    limits: CommandLimitsSchema,
    data: CommandLaneUsageSchema,
    control: CommandLaneUsageSchema,
    verifiedScopes: Type.Array(
      Type.Object({
        lane,
        tenantId: Type.String(),
        principalId: Type.String(),
        tenantCommands: integer(0),
        principalCommands: integer(0),
      }),
    ),
  }),
  httpAdmission: Type.Object({
    limits: HttpLimitsSchema,
    data: HttpPoolUsageSchema,
    control: HttpPoolUsageSchema,
    ingress: counters(["data", "control"]),
    verifiedScopes: Type.Array(
      Type.Object({
        pool: lane,
        tenantId: Type.String(),
        principalId: Type.String(),
        tenantRequests: integer(0),
        principalRequests: integer(0),
      }),
    ),
  }),
  disk: DiskStatusSchema,
  /** The Raft log's, the state's and the search index's databases. */
  storageLimits: Type.Object(
    { log: SqliteLimitsSchema, state: SqliteLimitsSchema, search: SqliteLimitsSchema },
    { description: "Each database's page cache, mapping and WAL size limit, in bytes" },
  ),
});
export type AdmissionStatus = Wire<typeof AdmissionStatusSchema>;
