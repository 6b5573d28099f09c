import { DashboardProcessError } from "./apphost-errors.js";
import { isProcessRecord, type ProcessRecord } from "./process-table.js";

/**
 * What `up --detach` tells the dashboard process it starts (dashboard-daemon.ts), and what that process
 * answers. Both ends are in this repository and run the same sources, so the launch travels as one JSON
 * argument and the answer as one IPC message.
 */
export interface DashboardLaunch {
  readonly stateDir: string;
  /** 0 for any free port. */
  readonly port: number;
  /** The `up` that starts it: until that has recorded it, no voter running is no reason to leave. */
  readonly starter: ProcessRecord;
  /** How long it stays once none of its voters runs. */
  readonly idleExitMs: number;
}

/** The one message the dashboard process sends: it serves, or why it cannot (an AppHostError's code). */
export type DashboardReport =
  | { readonly kind: "serving"; readonly url: string }
  | { readonly kind: "failed"; readonly code: string; readonly message: string };

export function launchArgs(launch: DashboardLaunch): string[] {
  return [JSON.stringify(launch)];
}

/** The launch from the process's arguments; DashboardProcessError when they are not one. */
export function parseLaunch(argv: readonly string[]): DashboardLaunch {
  let parsed: unknown;
  try {
    parsed = argv.length === 1 ? JSON.parse(argv[0]!) : undefined;
  } catch {
    parsed = undefined;
  }
  const launch = parsed as DashboardLaunch | undefined;
  if (
    typeof launch !== "object" ||
    launch === null ||
    typeof launch.stateDir !== "string" ||
    !Number.isInteger(launch.port) ||
    !isProcessRecord(launch.starter) ||
    !Number.isInteger(launch.idleExitMs)
  ) {
    throw new DashboardProcessError(
      `the dashboard process takes the launch \`up --detach\` gives it, not ${JSON.stringify(argv)}`,
    );
  }
  return launch;
}

export function isDashboardReport(value: unknown): value is DashboardReport {
  const r = value as Record<string, unknown> | null;
  if (typeof r !== "object" || r === null) return false;
  if (r.kind === "serving") return typeof r.url === "string";
  return r.kind === "failed" && typeof r.code === "string" && typeof r.message === "string";
}
