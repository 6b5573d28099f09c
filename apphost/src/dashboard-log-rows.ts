import type { LogRow } from "./dashboard-messages.js";

/** Fields a row has columns for already, or that every line of a voter repeats. */
const OWN_COLUMNS = new Set(["level", "time", "msg", "component", "pid", "hostname", "nodeId"]);

function text(value: unknown): string {
  if (typeof value === "string") return value;
  // A serialized error's stack belongs in the log file; a cell gets its type and message.
  const error = value as { type?: unknown; message?: unknown } | null;
  if (typeof error === "object" && error !== null && typeof error.message === "string") {
    return typeof error.type === "string" ? `${error.type}: ${error.message}` : error.message;
  }
  return JSON.stringify(value);
}

/** One voter log line as a row of the dashboard's console: pino's fields taken apart. */
export function logRowOf(seq: number, voter: string, line: string): LogRow {
  let entry: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      entry = parsed as Record<string, unknown>;
    }
  } catch {
    entry = undefined;
  }
  if (entry === undefined)
    return { seq, voter, time: null, level: null, component: null, msg: line, fields: {} };
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (!OWN_COLUMNS.has(key) && value !== undefined) fields[key] = text(value);
  }
  return {
    seq,
    voter,
    time: typeof entry.time === "number" ? entry.time : null,
    level: typeof entry.level === "number" ? entry.level : null,
    component: typeof entry.component === "string" ? entry.component : null,
    msg: typeof entry.msg === "string" ? entry.msg : "",
    fields,
  };
}
