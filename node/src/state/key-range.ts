import { MAX_KEY_CHARS } from "../requests/identifiers.js";

/** A half-open key range [low, high) in SQLite's BINARY order (UTF-8 bytes, i.e. code point order). */
export interface KeyRange {
  readonly low: string;
  readonly high: string;
}

/**
 * Greater than every valid key: a key has at most MAX_KEY_CHARS code points, so it is either smaller at
 * some position or a proper prefix of this string.
 */
const KEY_SPACE_END = String.fromCodePoint(0x10ffff).repeat(MAX_KEY_CHARS + 1);

/**
 * The keys starting with `prefix`, as a range an index can seek, rather than a LIKE/GLOB pattern whose
 * wildcards would need escaping and which SQLite cannot always turn into a range.
 */
export function prefixRange(prefix: string): KeyRange {
  const codePoints = Array.from(prefix);
  while (codePoints.length > 0) {
    const last = codePoints.pop()!.codePointAt(0)!;
    if (last < 0x10ffff) {
      // The successor of the last code point, skipping the surrogate block no well-formed key contains.
      const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
      return { low: prefix, high: codePoints.join("") + String.fromCodePoint(next) };
    }
  }
  return { low: prefix, high: KEY_SPACE_END };
}
