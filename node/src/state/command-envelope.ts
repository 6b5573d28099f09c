import { hash } from "node:crypto";
import { InvalidArgumentError } from "@keyload/contract";
import {
  COMMAND_KINDS,
  type CommandKind,
  type ParamName,
  type RouteParams,
} from "../requests/command-kinds.js";
import { checkCommandId, checkKey, checkName, checkScopeId } from "../requests/identifiers.js";
import { isApiKeyHash } from "./api-key.js";
import { checkQueueName } from "./queue-names.js";

/**
 * The kinds no request carries: a voter proposes them itself, under the system submitter (see
 * Principals.commandRefusal), never through a route. Kept apart from COMMAND_KINDS (which the HTTP
 * edge shares, in requests/) so that nothing typed for a request (a route, a forwarded command) can
 * name one.
 */
export const SYSTEM_COMMAND_KINDS = {
  "system.bootstrapAdmin": [], // the cluster's first admin, from the proposing leader's configuration
  "system.canonicalLimits": [], // the canonical limits from this entry on, from the proposing leader's
} as const satisfies Record<string, readonly ParamName[]>;

export type SystemCommandKind = keyof typeof SYSTEM_COMMAND_KINDS;

/** What an entry's envelope may carry. */
export type EntryKind = CommandKind | SystemCommandKind;

const ENTRY_KINDS: Readonly<Record<EntryKind, readonly ParamName[]>> = {
  ...COMMAND_KINDS,
  ...SYSTEM_COMMAND_KINDS,
};

export function isSystemKind(kind: EntryKind): kind is SystemCommandKind {
  return Object.hasOwn(SYSTEM_COMMAND_KINDS, kind);
}

const PARAM_CHECKS: Record<ParamName, (value: string) => string> = {
  key: (v) => checkKey("key", v),
  queue: checkQueueName,
  messageId: (v) => checkName("messageId", v),
  name: (v) => checkName("subscription name", v),
  deliveryId: (v) => checkName("deliveryId", v),
  memberId: (v) => checkName("memberId", v),
  channel: (v) => checkName("channel", v),
  principalId: (v) => checkScopeId("principalId", v),
  keyId: (v) => checkName("keyId", v),
};

/**
 * What a Raft entry's `data` carries for one command. The voter that accepted the request fills tenant,
 * principal and key ID from its verified principal catalog, and the leader stamps it from its clocks;
 * the state machine's time comes from these stamps alone (see advanceClock).
 */
export interface CommandEnvelope {
  readonly commandId: string;
  readonly kind: EntryKind;
  readonly tenant: string;
  readonly principal: string;
  /**
   * The ID (not secret) of the API key that authenticated the request. That voter's catalog may have
   * trailed the commit, so the state machine checks the key against the catalog as of this entry (see
   * Principals.commandRefusal). Absent only from entries not made from a request: written before
   * entries carried it, or built by a tool.
   */
  readonly keyId?: string;
  /** The leader's wall clock when it proposed the command, in ms since the epoch. */
  readonly timestampMs: number;
  /**
   * The leader's monotonic clock then, in whole ms from an origin of its own process: what moves the
   * state machine's clock between two commands of one term.
   */
  readonly monotonicMs: number;
  /**
   * The latest wall-clock time a majority of the voters' clocks had reached when the leader proposed
   * the command, as far as it knew them (voter/quorum-wall-clock.ts); absent when it knew of no
   * majority. What a new term's first command may move the state machine's clock on to, however far
   * (replicated-clock.ts).
   */
  readonly quorumWallMs?: number;
  readonly params: RouteParams;
  /**
   * Material the voter supplied for this command, outside the digest so a retry that supplies it afresh
   * still deduplicates. Only two kinds carry one: `admin.createKey`, the stored hash (ApiKeyHasher) of
   * the new API key, and `system.bootstrapAdmin`, that of the proposing leader's configured admin key
   * (whichever leader's committed first is the cluster's). The plain keys never enter an entry.
   * `unkeyed` marks an entry of envelope format 2, which carried the key's plain SHA-256 instead.
   */
  readonly generated?: { readonly keyHash: string; readonly unkeyed?: true };
  /** The request body text exactly as received; empty for a bodiless request. */
  readonly payload: string;
}

/**
 * Wire format: "KL", format version 3 (1 had no monotonicMs, 2 carried API keys' plain SHA-256 in
 * `generated`; it is still read), the header length (uint32, big-endian), the
 * header as UTF-8 JSON (every field but the payload), then the payload's UTF-8 bytes unescaped, so a body
 * costs its own size.
 */
const MAGIC_0 = 0x4b;
const MAGIC_1 = 0x4c;
const FORMAT_VERSION = 3;
/** Still decoded: committed entries written before format 3 may be applied after an upgrade. */
const UNKEYED_FORMAT_VERSION = 2;
const PREFIX_BYTES = 7;

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/**
 * What `encodeCommand` takes: an envelope whose payload is its text, or already its UTF-8 bytes (a
 * request's body as the edge received it), which go into the entry as they are.
 */
export type CommandDraft = Omit<CommandEnvelope, "payload"> & { readonly payload: string | Uint8Array };

export function encodeCommand(envelope: CommandDraft): Uint8Array {
  const header = JSON.stringify({
    commandId: envelope.commandId,
    kind: envelope.kind,
    tenant: envelope.tenant,
    principal: envelope.principal,
    ...(envelope.keyId === undefined ? {} : { keyId: envelope.keyId }),
    timestampMs: envelope.timestampMs,
    monotonicMs: envelope.monotonicMs,
    ...(envelope.quorumWallMs === undefined ? {} : { quorumWallMs: envelope.quorumWallMs }),
    params: sortedParams(envelope.params),
    ...(envelope.generated === undefined ? {} : { generated: { keyHash: envelope.generated.keyHash } }),
  });
  // Sized first so both strings encode straight into the entry, without an intermediate copy each.
  const headerBytes = Buffer.byteLength(header, "utf8");
  const payloadStart = PREFIX_BYTES + headerBytes;
  const { payload } = envelope;
  const payloadBytes = typeof payload === "string" ? Buffer.byteLength(payload, "utf8") : payload.byteLength;
  const out = new Uint8Array(payloadStart + payloadBytes);
  out[0] = MAGIC_0;
  out[1] = MAGIC_1;
  // A format-2 command decoded from an old entry stays format 2 when encoded again.
  out[2] = envelope.generated?.unkeyed ? UNKEYED_FORMAT_VERSION : FORMAT_VERSION;
  new DataView(out.buffer).setUint32(3, headerBytes);
  encoder.encodeInto(header, out.subarray(PREFIX_BYTES, payloadStart));
  if (typeof payload === "string") encoder.encodeInto(payload, out.subarray(payloadStart));
  else out.set(payload, payloadStart);
  return out;
}

/**
 * Parses and validates an entry's data. Throws InvalidArgumentError (reason MalformedEnvelope, or the
 * failing identifier's reason) for anything that is not a well-formed envelope, so the state machine can
 * commit it as a deterministic refusal instead of crashing every voter on the same entry.
 */
export function decodeCommand(data: Uint8Array): CommandEnvelope {
  if (data.byteLength < PREFIX_BYTES || data[0] !== MAGIC_0 || data[1] !== MAGIC_1) {
    throw malformed("not a KeyLoad command envelope");
  }
  const format = data[2];
  if (format !== FORMAT_VERSION && format !== UNKEYED_FORMAT_VERSION) {
    throw malformed(`unsupported envelope format ${format}`);
  }
  const headerBytes = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(3);
  if (headerBytes > data.byteLength - PREFIX_BYTES) throw malformed("header length beyond the entry");
  const header = parseHeader(data.subarray(PREFIX_BYTES, PREFIX_BYTES + headerBytes));
  let payload: string;
  try {
    payload = strictDecoder.decode(data.subarray(PREFIX_BYTES + headerBytes));
  } catch {
    throw malformed("payload is not valid UTF-8");
  }
  if (format === UNKEYED_FORMAT_VERSION && header.generated) {
    return { ...header, generated: { keyHash: header.generated.keyHash, unkeyed: true }, payload };
  }
  return { ...header, payload };
}

/**
 * The deduplication digest: SHA-256 over the kind, the route parameters (sorted) and the payload.
 * Tenant is left out because command IDs are already scoped per tenant, and the principal and key ID
 * because the same command resubmitted under another key of the tenant is still the same command.
 */
export function commandDigest(envelope: CommandEnvelope): Buffer {
  const route = JSON.stringify([envelope.kind, Object.entries(sortedParams(envelope.params))]);
  // The JSON prefix is self-delimiting, so the newline cannot be confused with payload bytes.
  return hash("sha256", `${route}\n${envelope.payload}`, "buffer");
}

/** Reads a route parameter the kind declares; the envelope was validated, so it is always present. */
export function routeParam(envelope: CommandEnvelope, name: ParamName): string {
  const value = envelope.params[name];
  if (value === undefined) throw malformed(`${envelope.kind} carries no ${name}`);
  return value;
}

const HEADER_FIELDS: ReadonlySet<string> = new Set([
  "commandId",
  "kind",
  "tenant",
  "principal",
  "keyId",
  "timestampMs",
  "monotonicMs",
  "quorumWallMs",
  "params",
  "generated",
]);

function parseHeader(bytes: Uint8Array): Omit<CommandEnvelope, "payload"> {
  let raw: unknown;
  try {
    raw = JSON.parse(strictDecoder.decode(bytes));
  } catch {
    throw malformed("header is not UTF-8 JSON");
  }
  if (!isRecord(raw)) throw malformed("header is not an object");
  // Read field by field rather than by rest destructuring, which copies the object on every entry.
  const extra = Object.keys(raw).filter((name) => !HEADER_FIELDS.has(name));
  if (extra.length > 0) throw malformed(`unknown header fields ${extra.join(", ")}`);
  const { commandId, kind, tenant, principal, keyId, timestampMs, monotonicMs, quorumWallMs } = raw;
  if (typeof commandId !== "string") throw malformed("commandId is not a string");
  if (typeof kind !== "string" || !Object.hasOwn(ENTRY_KINDS, kind))
    throw malformed(`unknown kind ${JSON.stringify(kind)}`);
  if (typeof tenant !== "string" || typeof principal !== "string")
    throw malformed("tenant/principal missing");
  if (keyId !== undefined && typeof keyId !== "string") throw malformed("keyId is not a string");
  if (!isNonNegativeInteger(timestampMs)) throw malformed("timestampMs is not a non-negative integer");
  if (!isNonNegativeInteger(monotonicMs)) throw malformed("monotonicMs is not a non-negative integer");
  if (quorumWallMs !== undefined && !isNonNegativeInteger(quorumWallMs))
    throw malformed("quorumWallMs is not a non-negative integer");
  const commandKind = kind as EntryKind;
  // Checked in the order the fields are listed, so a header with several faults is always refused for
  // the same one.
  const checkedCommandId = checkCommandId(commandId);
  const checkedTenant = checkScopeId("tenant", tenant);
  const checkedPrincipal = checkScopeId("principal", principal);
  const checkedKeyId = keyId === undefined ? undefined : PARAM_CHECKS.keyId(keyId);
  const header: Mutable<Omit<CommandEnvelope, "payload">> = {
    commandId: checkedCommandId,
    kind: commandKind,
    tenant: checkedTenant,
    principal: checkedPrincipal,
    timestampMs,
    monotonicMs,
    params: parseParams(commandKind, raw.params),
  };
  if (checkedKeyId !== undefined) header.keyId = checkedKeyId;
  if (quorumWallMs !== undefined) header.quorumWallMs = quorumWallMs;
  const generated = parseGenerated(commandKind, raw.generated);
  if (generated !== undefined) header.generated = generated;
  return header;
}

function parseParams(kind: EntryKind, raw: unknown): RouteParams {
  if (!isRecord(raw)) throw malformed("params is not an object");
  const expected = ENTRY_KINDS[kind];
  const names = Object.keys(raw);
  if (names.length !== expected.length || !expected.every((name) => Object.hasOwn(raw, name))) {
    throw malformed(`${kind} takes route parameters [${expected.join(", ")}], got [${names.join(", ")}]`);
  }
  const params: Partial<Record<ParamName, string>> = {};
  for (const name of expected) {
    const value = raw[name];
    if (typeof value !== "string") throw malformed(`route parameter ${name} is not a string`);
    params[name] = PARAM_CHECKS[name](value);
  }
  return params;
}

function parseGenerated(kind: EntryKind, raw: unknown): { keyHash: string } | undefined {
  if (kind !== "admin.createKey" && kind !== "system.bootstrapAdmin") {
    if (raw !== undefined) throw malformed(`${kind} carries no generated material`);
    return undefined;
  }
  if (!isRecord(raw) || typeof raw.keyHash !== "string" || !isApiKeyHash(raw.keyHash)) {
    throw malformed(`${kind} needs generated.keyHash, a lowercase hex SHA-256`);
  }
  return { keyHash: raw.keyHash };
}

function sortedParams(params: RouteParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(params).sort()) {
    const value = params[name as ParamName];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function malformed(message: string): InvalidArgumentError {
  return new InvalidArgumentError(`malformed command envelope: ${message}`, { reason: "MalformedEnvelope" });
}
