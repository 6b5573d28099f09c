import { VOTER_NAMES } from "./app-model.js";
import { APPHOST_USER_AGENT } from "./apphost-poll.js";

/** ANSI colours for the voter prefixes, one per voter so interleaved lines stay easy to follow. */
const PREFIX_COLOURS = ["\x1b[36m", "\x1b[35m", "\x1b[33m"] as const;
const RESET = "\x1b[0m";
const DIM = "\x1b[2m";
const LEVEL_STYLE: Record<number, { name: string; colour: string }> = {
  10: { name: "TRACE", colour: DIM },
  20: { name: "DEBUG", colour: DIM },
  30: { name: "INFO ", colour: "\x1b[32m" },
  40: { name: "WARN ", colour: "\x1b[33m" },
  50: { name: "ERROR", colour: "\x1b[31m" },
  60: { name: "FATAL", colour: "\x1b[41m" },
};
/** Fields every pino line carries, or that the prefix already shows. */
const HIDDEN = new Set(["level", "time", "pid", "hostname", "nodeId", "msg", "component", "source"]);

/** Whether to colour output written to `stream`, following the NO_COLOR and FORCE_COLOR conventions. */
export function useColour(stream: NodeJS.WriteStream): boolean {
  if (process.env.NO_COLOR) return false;
  if (process.env.FORCE_COLOR && process.env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true;
}

export function paint(text: string, colour: string, enabled: boolean): string {
  return enabled ? `${colour}${text}${RESET}` : text;
}

function voterPrefix(voter: string, colour: boolean): string {
  const index = (VOTER_NAMES as readonly string[]).indexOf(voter);
  const tint = PREFIX_COLOURS[index % PREFIX_COLOURS.length] ?? PREFIX_COLOURS[0];
  return paint(`${voter.padEnd(6)} |`, tint, colour);
}

function clock(time: unknown): string {
  const date = typeof time === "number" ? new Date(time) : new Date();
  return date.toISOString().slice(11, 23);
}

function shown(value: unknown): string {
  if (typeof value === "string") return /\s/.test(value) ? JSON.stringify(value) : value;
  // A serialized error's stack belongs in the log file; the console gets its type and message.
  const error = value as { type?: unknown; message?: unknown } | null;
  if (typeof error === "object" && error !== null && typeof error.message === "string") {
    return JSON.stringify(typeof error.type === "string" ? `${error.type}: ${error.message}` : error.message);
  }
  return JSON.stringify(value);
}

/**
 * One voter log line for a person: the coloured voter prefix, the time, the level, the message and the
 * remaining fields as key=value. A line that is not a pino JSON object is shown as it is.
 */
export function formatLogLine(voter: string, line: string, colour: boolean): string {
  const prefix = voterPrefix(voter, colour);
  let entry: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return `${prefix} ${line}`;
    entry = parsed as Record<string, unknown>;
  } catch {
    return `${prefix} ${line}`;
  }
  const style = LEVEL_STYLE[typeof entry.level === "number" ? entry.level : 30] ?? LEVEL_STYLE[30]!;
  const component = typeof entry.component === "string" ? `[${entry.component}] ` : "";
  const source = entry.source === "apphost" ? "[apphost] " : "";
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${shown(value)}`)
    .join(" ");
  const text = `${source}${component}${String(entry.msg ?? "")}${fields ? ` ${paint(fields, DIM, colour)}` : ""}`;
  return `${prefix} ${paint(clock(entry.time), DIM, colour)} ${paint(style.name, style.colour, colour)} ${text}`;
}

const APPHOST_POLL = `"userAgent":${JSON.stringify(APPHOST_USER_AGENT)}`;

/**
 * Health probes (anyone's: readiness checks, an orchestrator's liveness probes) and the AppHost's own
 * polls (the dashboard's admission and metrics readings every second) would drown the console.
 */
export function isProbeLine(line: string): boolean {
  return line.includes('"route":"/health/') || line.includes(APPHOST_POLL);
}
