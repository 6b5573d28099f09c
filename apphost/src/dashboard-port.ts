import { APPHOST_DEFAULTS } from "./apphost-defaults.js";
import { UsageError } from "./apphost-errors.js";

/** `--dashboard-port N`: a TCP port, 0 for no dashboard. Throws UsageError. */
export function parseDashboardPort(text: string): number {
  const port = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535) {
    throw new UsageError(
      `--dashboard-port takes a port from 0 (no dashboard) to 65535, not ${JSON.stringify(text)}`,
    );
  }
  return port;
}

/**
 * The port `up` serves its dashboard on: the one given, the default, or (with `--isolated`, where
 * clusters run side by side) any free one, which listening on 0 picks. Null: no dashboard.
 */
/** What to do about a dashboard port in use, --isolated aside (which leaves a given port as it is). */
export const DASHBOARD_PORT_REMEDY = "choose another with --dashboard-port N (0: no dashboard)";

export function dashboardPortFor(given: number | undefined, isolated: boolean): number | null {
  if (given === 0) return null;
  return given ?? (isolated ? 0 : APPHOST_DEFAULTS.dashboardPort);
}
