import {
  COMMAND_ID_PATTERN,
  InvalidArgumentError,
  MAX_KEY_CHARS,
  NAME_PATTERN,
  SCOPE_ID_PATTERN,
} from "@keyload/contract";

// The contract's alphabets, the very ones the edge's schemas check: the voter refuses what the edge would.
const COMMAND_ID = new RegExp(COMMAND_ID_PATTERN);
const SCOPE_ID = new RegExp(SCOPE_ID_PATTERN);
const NAME = new RegExp(NAME_PATTERN);

/** A surrogate half without its partner: text SQLite would store as U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export { MAX_EDGE_TYPE_CHARS, MAX_KEY_CHARS } from "@keyload/contract";

export function isCommandId(value: string): boolean {
  return COMMAND_ID.test(value);
}

export function checkCommandId(value: string): string {
  if (!COMMAND_ID.test(value)) {
    throw new InvalidArgumentError("a command ID is 1-128 characters of [A-Za-z0-9._:-]", {
      reason: "InvalidCommandId",
    });
  }
  return value;
}

export function checkScopeId(what: string, value: string): string {
  if (!SCOPE_ID.test(value)) {
    throw new InvalidArgumentError(`${what} must be 1-128 characters of [A-Za-z0-9._:@-]`, {
      reason: "InvalidIdentifier",
    });
  }
  return value;
}

export function checkName(what: string, value: string): string {
  if (!NAME.test(value)) {
    throw new InvalidArgumentError(`${what} must be 1-256 characters of [A-Za-z0-9._:@-]`, {
      reason: "InvalidIdentifier",
    });
  }
  return value;
}

/**
 * Catalog keys and graph node IDs: 1–512 characters (code points), any text but lone surrogates, which
 * SQLite would silently replace and so make two distinct keys collide.
 */
export function checkKey(what: string, value: string): string {
  return checkText(what, value, MAX_KEY_CHARS);
}

export function checkText(what: string, value: string, maxChars: number): string {
  if (value.length === 0 || LONE_SURROGATE.test(value) || codePointLength(value, maxChars) > maxChars) {
    throw new InvalidArgumentError(`${what} must be 1-${maxChars} characters of well-formed text`, {
      reason: "InvalidKey",
    });
  }
  return value;
}

/** Counts code points, stopping once past `cap` (UTF-16 length bounds it from above). */
function codePointLength(value: string, cap: number): number {
  if (value.length <= cap) return value.length;
  let count = 0;
  for (const _ of value) {
    count++;
    if (count > cap) break;
  }
  return count;
}
