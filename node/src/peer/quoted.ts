/** What of a string from the wire an error message (and so a log line) may carry, by default. */
const MAX_QUOTED_CHARS = 64;
/** DEL and the C1 controls: JSON leaves them as they are, but a terminal obeys C1 (CSI, OSC). */
const UNESCAPED_CONTROLS = /[\u007f-\u009f]/g;

/**
 * A string received from a peer or a stranger, as an error message names it: JSON-quoted, with DEL and
 * the C1 controls escaped too, so control characters cannot forge log lines or drive a terminal; and
 * cut short, so a 64 KiB field cannot become a 64 KiB log line. `maxChars` bounds the text between the
 * quotes as written, escapes included, so a field of control characters is no longer than any other.
 */
export function quoted(value: string, maxChars = MAX_QUOTED_CHARS): string {
  // No character is written shorter than it is: what lies beyond `maxChars` goes before escaping.
  const json = JSON.stringify(value.slice(0, maxChars + 1)).replace(
    UNESCAPED_CONTROLS,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  if (value.length <= maxChars && json.length <= maxChars + 2) return json;
  return `"${cutWhole(json.slice(1, -1), maxChars)}…"`;
}

/** The longest start of JSON string text within `maxChars` that splits no escape or surrogate pair. */
function cutWhole(text: string, maxChars: number): string {
  let end = 0;
  while (end < text.length) {
    const code = text.charCodeAt(end);
    const length = code === 0x5c ? (text[end + 1] === "u" ? 6 : 2) : code >= 0xd800 && code <= 0xdbff ? 2 : 1;
    if (end + length > maxChars) break;
    end += length;
  }
  return text.slice(0, end);
}
