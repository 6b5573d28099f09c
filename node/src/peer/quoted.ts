/** What of a string from the wire an error message (and so a log line) may carry. */
const MAX_QUOTED_CHARS = 64;

/**
 * A string received from a peer or a stranger, as an error message names it: JSON-quoted, so control
 * characters cannot forge log lines, and cut short, so a 64 KiB field cannot become a 64 KiB log line.
 */
export function quoted(value: string): string {
  return JSON.stringify(value.length > MAX_QUOTED_CHARS ? `${value.slice(0, MAX_QUOTED_CHARS)}…` : value);
}
