export type { Member, MemberStatus } from "@keyload/contract";
// What the HTTP edge names too, defined in requests/ and re-exported for the package's users.
export {
  COMMAND_KINDS,
  type CommandKind,
  type ParamName,
  type RouteParams,
} from "../requests/command-kinds.js";
export { JsonText } from "../requests/json-text.js";
export { READ_LIMITS } from "../requests/read-limits.js";
export { ROLES, type Role } from "../requests/roles.js";
export { generateApiKey, hashApiKey, isApiKeyHash } from "./api-key.js";
export { ApiKeyHasher } from "./api-key-hasher.js";
export type { ApplyResult } from "./apply-result.js";
export { BOOTSTRAP_ADMIN_COMMAND_ID, bootstrapAdminCommand } from "./bootstrap-admin-command.js";
export {
  type FieldFilter,
  type FilterOp,
  parseBulkGetRequest,
  parseQueryRequest,
  type QueryRequest,
} from "./catalog-query.js";
export type { Change, ChangeKind } from "./change-feed.js";
export {
  type CommandEnvelope,
  commandDigest,
  decodeCommand,
  type EntryKind,
  encodeCommand,
  SYSTEM_COMMAND_KINDS,
  type SystemCommandKind,
} from "./command-envelope.js";
export type { CommandOutcome, OutcomeError } from "./command-outcomes.js";
export type { AppliedPosition } from "./database.js";
export type { Directive } from "./dispatch.js";
export type { StoredDocument, WriteResult } from "./documents.js";
export { type Edge, parseTraverseRequest, type TraverseRequest } from "./graph.js";
export type { TraversedNode } from "./graph-traversal.js";
export { type CanonicalLimits, DEFAULT_LIMITS, limitsFingerprint, resolveLimits } from "./limits.js";
export type { MembershipTable } from "./membership.js";
export { BOOTSTRAP_PRINCIPAL, SYSTEM_TENANT, type VerifiedPrincipal } from "./principals.js";
export { DEAD_LETTER_SUFFIX } from "./queue-names.js";
export { parseSearchRequest, type SearchCursor, type SearchRequest } from "./search-query.js";
export { type CommandOutcomeView, StateMachine, type StateMachineOptions } from "./state-machine.js";
