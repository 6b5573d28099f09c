import type { JsonValueShape } from "./json-value.js";

/**
 * From this many string characters per value on, a value is written by `writePlain`: V8's
 * JSON.stringify looks at every character of a string for one to escape, which costs more than
 * `writePlain`'s work per value once the strings are this long (docs/benchmarks.md, "State apply").
 */
const PLAIN_CHARS_PER_VALUE = 64;

/**
 * The JSON text of a value parsed from a command's payload and checked (`shape` is what the check
 * counted), exactly as JSON.stringify writes it. `plainPayload`: the payload held no backslash. Then
 * no string in the value holds a character JSON.stringify escapes: a quote would have ended the string,
 * a control character is not valid JSON, and a lone surrogate is not valid UTF-8, which the payload was
 * decoded from; each string is written as it is, between quotes.
 */
export function storedJson(value: unknown, shape: JsonValueShape, plainPayload: boolean): string {
  return plainPayload && shape.stringChars >= shape.values * PLAIN_CHARS_PER_VALUE
    ? writePlain(value)
    : JSON.stringify(value);
}

/**
 * JSON.stringify's output for a parsed value whose strings need no escape: fields in the order
 * Object.keys gives, which is JSON.stringify's. Recursive, as the check bounded the depth.
 */
function writePlain(value: unknown): string {
  if (typeof value === "string") return `"${value}"`;
  if (typeof value !== "object" || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? "" : ","}${writePlain(value[i])}`;
    return `${out}]`;
  }
  const fields = value as Record<string, unknown>;
  let out = "{";
  let first = true;
  for (const name of Object.keys(fields)) {
    out += `${first ? "" : ","}"${name}":${writePlain(fields[name])}`;
    first = false;
  }
  return `${out}}`;
}
