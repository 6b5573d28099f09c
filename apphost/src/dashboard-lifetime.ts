import { StateDirError } from "./apphost-errors.js";
import { type AppHostState, readState } from "./apphost-state.js";
import { isAlive, isSameProcess, type ProcessRecord } from "./process-table.js";

/**
 * Whether a detached cluster's dashboard process (dashboard-daemon.ts) is still of use: `needed` while
 * the `up` that starts it runs or any voter of its cluster does; `idle` once none does; `forgotten` once
 * the state no longer records it (`down` cleared it, a later `up` replaced it, the state dir was wiped):
 * no command would find or stop it then.
 */
export type DashboardStanding = "needed" | "idle" | "forgotten";

export function dashboardStanding(
  state: AppHostState | undefined,
  self: ProcessRecord,
  starterAlive: boolean,
): DashboardStanding {
  // Until `up` has recorded it the state may be a previous cluster's, with no voter or another dashboard.
  if (starterAlive) return "needed";
  const recorded = state?.dashboard ?? null;
  if (state === undefined || recorded === null || !isSameProcess(recorded, self)) return "forgotten";
  return state.voters.some((v) => isAlive(v.process)) ? "needed" : "idle";
}

export interface LifetimeOptions {
  readonly stateFile: string;
  readonly self: ProcessRecord;
  readonly starter: ProcessRecord;
  /** How long `idle` may last before the process leaves. */
  readonly idleExitMs: number;
  readonly pollMs: number;
  /** Called once, with why the process should leave now. */
  readonly onLeave: (why: string) => void;
}

function readStateOrNone(stateFile: string): AppHostState | undefined {
  try {
    return readState(stateFile);
  } catch (err) {
    // A state file no command can read records no dashboard either.
    if (err instanceof StateDirError) return undefined;
    throw err;
  }
}

/**
 * Polls the state and tells `onLeave` when the dashboard process should go, so it never outlives its
 * cluster: at once when forgotten, after `idleExitMs` of idleness otherwise (a voter stopped and started
 * again, from the dashboard or the CLI, is not the end of the cluster). Returns what stops the polling.
 */
export function watchDashboardLifetime(options: LifetimeOptions): () => void {
  let idleSince: number | undefined;
  let done = false;
  const check = (): void => {
    if (done) return;
    const standing = dashboardStanding(
      readStateOrNone(options.stateFile),
      options.self,
      isAlive(options.starter),
    );
    const now = Date.now();
    idleSince = standing === "idle" ? (idleSince ?? now) : undefined;
    if (standing === "forgotten") {
      done = true;
      options.onLeave("the cluster's state no longer records this dashboard");
    } else if (idleSince !== undefined && now - idleSince >= options.idleExitMs) {
      done = true;
      options.onLeave(`none of the cluster's voters has run for ${Math.round((now - idleSince) / 1000)} s`);
    }
  };
  const timer = setInterval(check, options.pollMs);
  return () => {
    done = true;
    clearInterval(timer);
  };
}
