import { type TString, Type } from "@sinclair/typebox";
import { text } from "./json-schema.js";

/**
 * The identifier shapes of the wire: what the edge's schemas check and the voter's own checks
 * (node/src/requests/identifiers.ts) test, from these same constants.
 */

/** Contract section 4: command IDs are 1–128 characters of `[A-Za-z0-9._:-]`. */
export const COMMAND_ID_PATTERN = "^[A-Za-z0-9._:-]{1,128}$";
/** Queue, subscription and channel names, message, delivery and key IDs. */
export const NAME_PATTERN = "^[A-Za-z0-9._:@-]{1,256}$";
/** A message that exhausts its attempts moves to the queue of this name; that queue never dead-letters. */
export const DEAD_LETTER_SUFFIX = ".dead-letter";
/** A queue name leaves room for its dead-letter suffix, so every dead-letter queue is addressable too. */
export const MAX_QUEUE_NAME_CHARS = 256 - DEAD_LETTER_SUFFIX.length;
/** A name of at most `MAX_QUEUE_NAME_CHARS`, or a dead-letter queue's: such a name and the suffix. */
export const QUEUE_NAME_PATTERN = `^[A-Za-z0-9._:@-]{1,${MAX_QUEUE_NAME_CHARS}}(?:\\.dead-letter)?$`;
/** Tenants and principals appear in URLs and logs, so they keep to a URL-safe alphabet. */
export const SCOPE_ID_PATTERN = "^[A-Za-z0-9._:@-]{1,128}$";

/** Contract section 4: keys are 1–512 characters. */
export const MAX_KEY_CHARS = 512;
export const MAX_EDGE_TYPE_CHARS = 128;
/** A Raft member ID: a voter name (at most 64 characters), maybe ~ and 8 hex digits of its incarnation. */
export const MAX_CLUSTER_MEMBER_ID_CHARS = 73;

/** A catalog key (or graph node ID); JSON Schema counts code points, as the voter does. */
export function key(description?: string): TString {
  return text(1, MAX_KEY_CHARS, description);
}

export function name(description: string): TString {
  return Type.String({ pattern: NAME_PATTERN, description });
}

export function queueName(description: string): TString {
  return Type.String({ pattern: QUEUE_NAME_PATTERN, description });
}

export function scopeId(description: string): TString {
  return Type.String({ pattern: SCOPE_ID_PATTERN, description });
}

export function commandId(description?: string): TString {
  return Type.String({ pattern: COMMAND_ID_PATTERN, ...(description === undefined ? {} : { description }) });
}

/** The voter checks the exact shape (voter/member-identity.ts); the edge only bounds the length. */
export function clusterMemberId(description: string): TString {
  return text(1, MAX_CLUSTER_MEMBER_ID_CHARS, description);
}
