/**
 * The path parameters each read kind carries, one kind per read route of the contract (section 4 and
 * section 7). Like COMMAND_KINDS for writes: the HTTP edge names the read, the voter answers it.
 */
export const READ_KINDS = {
  "catalog.get": ["key"], // GET /v1/catalog/{key}
  "catalog.bulkGet": [], // POST /v1/catalog/bulk-get
  query: [], // POST /v1/query
  search: [], // POST /v1/search
  "graph.traverse": [], // POST /v1/graph/traverse
  "command.get": ["commandId"], // GET /v1/commands/{commandId}
  "membership.list": [], // GET /v1/membership
  "dispatch.read": ["channel"], // GET /v1/dispatch/{channel}?after=N
  "admin.admissionStatus": [], // GET /v1/admin/admission
  "cluster.members": [], // GET /v1/admin/cluster/members
} as const satisfies Record<string, readonly ReadParamName[]>;

export type ReadKind = keyof typeof READ_KINDS;

export type ReadParamName = "key" | "commandId" | "channel";

export type ReadParams = Readonly<Partial<Record<ReadParamName, string>>>;
