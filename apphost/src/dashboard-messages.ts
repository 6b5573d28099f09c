/**
 * What the dashboard's server sends its page over server-sent events, and what the page posts back.
 * Plain types with no imports, shared by the server (apphost/src) and the page (apphost/dashboard).
 */

/** The voter operations the page offers, each behind a confirmation. */
export type DashboardAction = "stop" | "start" | "restart" | "kill" | "pause" | "resume" | "transfer-leader";

/** Admission limits the gauges are drawn against (contract sections 5 and 7). */
export interface AdmissionLimits {
  readonly dataCommands: number;
  readonly dataRetainedBytes: number;
  readonly controlCommands: number;
  readonly controlRetainedBytes: number;
  readonly dataRequests: number;
  readonly dataModeledBytes: number;
  readonly controlRequests: number;
  readonly controlModeledBytes: number;
}

/** One reading of a voter's admission usage; the same keys as the limits. */
export type AdmissionUsage = { readonly [K in keyof AdmissionLimits]: number };

/**
 * Refusals counted since the voter started, from its /metrics, keyed `governor/lane/reason`
 * (`http/data/HttpRequests`, `command/data/CommandCount`, ...).
 */
export type RefusalTotals = Readonly<Record<string, number>>;

export interface AdmissionReading {
  readonly limits: AdmissionLimits;
  readonly usage: AdmissionUsage;
  readonly refusals: RefusalTotals;
}

/** One voter as the resources table shows it: `status --json`'s fields and its admission reading. */
export interface DashboardVoter {
  readonly name: string;
  readonly state: string;
  readonly pid: number | null;
  readonly role: string;
  readonly term: number | null;
  readonly commitIndex: number | null;
  readonly appliedIndex: number | null;
  readonly health: string;
  readonly member: string | null;
  readonly httpUrl: string;
  readonly peerAddress: string;
  readonly dataDir: string;
  readonly forwardedEnv: Readonly<Record<string, string>>;
  /** Null when the voter could not be asked (not running, or it did not answer). */
  readonly admission: AdmissionReading | null;
  /** Why `admission` is null while the voter runs. */
  readonly admissionError: string | null;
}

export interface DashboardSnapshot {
  /** Milliseconds since the epoch. */
  readonly at: number;
  readonly voters: readonly DashboardVoter[];
}

/** One point of a voter's admission history, for the small charts. */
export interface AdmissionPoint {
  readonly at: number;
  readonly usage: AdmissionUsage | null;
  readonly refusals: RefusalTotals | null;
}

/** One voter log line, its pino fields taken apart. A line that is not pino JSON has only `msg`. */
export interface LogRow {
  readonly seq: number;
  readonly voter: string;
  readonly time: number | null;
  /** Pino's number: 10 trace, 20 debug, 30 info, 40 warn, 50 error, 60 fatal; null when unknown. */
  readonly level: number | null;
  readonly component: string | null;
  readonly msg: string;
  readonly fields: Readonly<Record<string, string>>;
}

/** The first event of a connection: where the cluster lives, the history so far and the recent logs. */
export interface DashboardHello {
  readonly stateDir: string;
  readonly adminKeyFile: string;
  readonly voters: readonly string[];
  readonly actions: readonly DashboardAction[];
  readonly snapshot: DashboardSnapshot | null;
  readonly history: Readonly<Record<string, readonly AdmissionPoint[]>>;
  readonly logs: readonly LogRow[];
}

/** What `POST /api/voters/{voter}/{action}` answers. */
export type ActionReply =
  | { readonly ok: true; readonly message: string }
  | { readonly ok: false; readonly code: string; readonly message: string };
