import { UsageError } from "./apphost-errors.js";

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration on the command line, `500ms`, `30s`, `5m`, `1h` or `2d`, in milliseconds. Throws UsageError. */
export function parseDuration(option: string, text: string): number {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text);
  if (!match) {
    throw new UsageError(
      `--${option} takes a duration such as 30s, 5m, 1h or 2d, not ${JSON.stringify(text)}`,
    );
  }
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** A count on the command line: a whole number, 0 or more. Throws UsageError. */
export function parseCount(option: string, text: string): number {
  if (!/^\d{1,9}$/.test(text)) {
    throw new UsageError(`--${option} takes a whole number below a billion, not ${JSON.stringify(text)}`);
  }
  return Number(text);
}
