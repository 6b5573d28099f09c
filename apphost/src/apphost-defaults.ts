import type { RuntimeKind } from "./runtime-kind.js";

/** Every AppHost setting that has a default, declared once. */
export const APPHOST_DEFAULTS = {
  /** The state dir, relative to the repository root. */
  stateDirName: ".keyload",
  /** The `.env` file, relative to the repository root. */
  envFileName: ".env",
  /** Voters bind loopback only: the AppHost is a local development and test tool. */
  host: "127.0.0.1",
  /** voter1 gets the base port, voter2 the next, and so on. */
  httpPortBase: 7101,
  peerPortBase: 7201,
  runtime: "process" as RuntimeKind,
  /** How long `up` waits for every voter to be ready and one leader to be elected. */
  readinessTimeoutMs: 60_000,
  /** How long `start` waits for one voter's HTTP endpoint to answer. */
  startTimeoutMs: 30_000,
  /** How long `start` lets a voter that has just exited release its ports. */
  portReleaseMs: 2_000,
  /** How long a voter has to exit after SIGTERM before it gets SIGKILL. */
  stopGraceMs: 10_000,
  /** How long `replace` waits for the other voters to be ready before it changes anything. */
  replaceQuorumWaitMs: 15_000,
  /** How often readiness and exits are polled. */
  pollIntervalMs: 150,
  /** How long one health probe may take. */
  probeTimeoutMs: 1_000,
  /** How many of a failing voter's log lines an error shows. */
  failureLogLines: 25,
  /** How long one voter's admission status (a quorum read) may take to answer. */
  admissionTimeoutMs: 2_000,
  /** How often `status --watch` redraws. */
  watchIntervalMs: 1_000,
  /** Where the foreground AppHost serves its dashboard (`--dashboard-port`; 0 turns it off). */
  dashboardPort: 18_888,
  /**
   * How long a detached cluster's dashboard process stays once none of its voters runs (killed by hand,
   * say): long enough for a voter stopped and started again from the dashboard, short enough not to linger.
   */
  dashboardIdleExitMs: 15_000,
  /** How long `up --detach` waits for its dashboard process to say it serves, or why it cannot. */
  dashboardStartTimeoutMs: 30_000,
  /**
   * The voters' `Log:Level` unless the configuration forwarded to them sets one: debug, where every
   * request gets a line, as one debugging a cluster locally wants; a deployment keeps the voter's info.
   */
  voterLogLevel: "debug",
} as const;
