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
/** C0 and C1 controls and DEL (Unicode's Cc): in a voter's line they could drive the terminal. */
const CONTROL = /\p{Cc}/u;
const CONTROLS = /\p{Cc}/gu;
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

/**
 * `text` with every control character written as a `\u` escape. A voter's lines carry what clients
 * sent (a User-Agent, which Node reads as latin1, so bytes 0x80-0x9f arrive as C1 controls such as
 * CSI and OSC); JSON escapes only C0, and a terminal obeys C1 too.
 */
function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function shown(value: unknown): string {
  if (typeof value === "string") {
    // Quoted when it holds controls too, so an escape is told from a backslash the value holds.
    return /\s/.test(value) || CONTROL.test(value) ? escapeControls(JSON.stringify(value)) : value;
  }
  // A serialized error's stack belongs in the log file; the console gets its type and message.
  const error = value as { type?: unknown; message?: unknown } | null;
  if (typeof error === "object" && error !== null && typeof error.message === "string") {
    return escapeControls(
      JSON.stringify(typeof error.type === "string" ? `${error.type}: ${error.message}` : error.message),
    );
  }
  return escapeControls(JSON.stringify(value));
}

/**
 * One voter log line for a person: the coloured voter prefix, the time, the level, the message and the
 * remaining fields as key=value. A line that is not a pino JSON object is shown as it is.
 */
export function formatLogLine(voter: string, line: string, colour: boolean): string {
  const prefix = voterPrefix(voter, colour);
  const entry = parsedLine(line);
  if (entry === null) return `${prefix} ${escapeControls(line)}`;
  const style = LEVEL_STYLE[typeof entry.level === "number" ? entry.level : 30] ?? LEVEL_STYLE[30]!;
  const component = typeof entry.component === "string" ? `[${escapeControls(entry.component)}] ` : "";
  const source = entry.source === "apphost" ? "[apphost] " : "";
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${escapeControls(key)}=${shown(value)}`)
    .join(" ");
  const message = escapeControls(String(entry.msg ?? ""));
  const text = `${source}${component}${message}${fields ? ` ${paint(fields, DIM, colour)}` : ""}`;
  return `${prefix} ${paint(clock(entry.time), DIM, colour)} ${paint(style.name, style.colour, colour)} ${text}`;
}

/** A pino JSON line's fields, or null when the line is not a JSON object. */
function parsedLine(line: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** What the AppHost's polls leave in a voter's log: `GET` of these routes (apphost-poll.ts's callers). */
const POLLED_ROUTES: ReadonlyMap<string, { readonly admin: boolean }> = new Map([
  // With the kept admin key: the dashboard's sampler (every second: metrics and admission),
  ["/metrics", { admin: true }],
  // `admission`, `up`'s key check...
  ["/v1/admin/admission", { admin: true }],
  // ...and `status`, for the membership of the voters that cannot answer for themselves.
  ["/v1/admin/cluster/members", { admin: true }],
]);
/** The principal of the admin key the AppHost keeps (the bootstrap admin, state/principals.ts). */
const APPHOST_PRINCIPAL = "admin";
/**
 * Statuses a poll gets from a voter that works: the answer, or (admin reads) no room or no leader
 * now. A poll given up on is logged as aborted, with no status. Anything else is worth showing.
 */
const POLL_STATUSES: ReadonlySet<number | null> = new Set([200, 429, 503, null]);
/** What a probe's or a poll's line holds: tested before parsing, as most lines are neither. */
const HEALTH_ROUTE = '"route":"/health/';
const APPHOST_POLL = `"userAgent":${JSON.stringify(APPHOST_USER_AGENT)}`;

/**
 * Whether `entry` is one of the AppHost's own polls. The User-Agent alone says nothing (any client can
 * send it, to hide its requests from the console), so the whole request must look like a poll: the
 * method, the route, the status and, on the admin routes, the AppHost's principal.
 */
function isAppHostPoll(entry: Record<string, unknown>): boolean {
  if (entry.msg !== "request" || entry.userAgent !== APPHOST_USER_AGENT || entry.method !== "GET")
    return false;
  const polled = typeof entry.route === "string" ? POLLED_ROUTES.get(entry.route) : undefined;
  if (polled === undefined) return false;
  const status = entry.status;
  if (!(status === null || typeof status === "number") || !POLL_STATUSES.has(status)) return false;
  // A poll refused before its key was checked (no slot, or the voter shutting down) names no one.
  const principalShown = polled.admin ? APPHOST_PRINCIPAL : undefined;
  if (
    entry.principalId !== principalShown &&
    !(polled.admin && entry.principalId === undefined && status !== 200)
  )
    return false;
  // The metrics need no admission: only their answer, or a poll given up on.
  return polled.admin || status === 200 || status === null;
}

/**
 * Health probes (anyone's: readiness checks, an orchestrator's liveness probes) and the AppHost's own
 * polls (the dashboard's admission and metrics readings every second) would drown the console.
 */
export function isProbeLine(line: string): boolean {
  if (!line.includes(HEALTH_ROUTE) && !line.includes(APPHOST_POLL)) return false;
  const entry = parsedLine(line);
  if (entry === null) return false;
  if (typeof entry.route === "string" && entry.route.startsWith("/health/")) return true;
  return isAppHostPoll(entry);
}
