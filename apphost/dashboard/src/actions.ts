import type { ActionReply, DashboardAction, DashboardVoter } from "../../src/dashboard-messages.js";
import { confirmAction } from "./confirm-dialog.js";
import { byId } from "./dom.js";

interface ActionSpec {
  readonly label: string;
  /** What the confirmation says the action does. */
  readonly effect: string;
  /** Whether it makes sense for a voter in this state. */
  readonly applies: (voter: DashboardVoter) => boolean;
}

const running = (v: DashboardVoter): boolean => v.state === "running";
const alive = (v: DashboardVoter): boolean => v.state === "running" || v.state === "paused";

export const ACTIONS: Readonly<Record<DashboardAction, ActionSpec>> = {
  start: { label: "Start", effect: "starts its process again", applies: (v) => !alive(v) },
  stop: {
    label: "Stop",
    effect: "stops it gracefully (SIGTERM, then SIGKILL after a grace period)",
    applies: alive,
  },
  restart: { label: "Restart", effect: "stops it gracefully and starts it again", applies: alive },
  kill: { label: "Kill", effect: "kills its process at once (SIGKILL)", applies: alive },
  pause: { label: "Pause", effect: "freezes its process (SIGSTOP) until it is resumed", applies: running },
  resume: {
    label: "Resume",
    effect: "lets its frozen process go on (SIGCONT)",
    applies: (v) => v.state === "paused",
  },
  "transfer-leader": {
    label: "Make leader",
    effect: "hands it the cluster's leadership",
    applies: (v) => running(v) && v.role !== "leader",
  },
};

function notify(text: string, failed: boolean): void {
  const notice = byId("notice");
  notice.textContent = text;
  notice.dataset.failed = String(failed);
  notice.hidden = false;
}

/** Asks for confirmation, then has the AppHost carry out the action, and says how it went. */
export async function runAction(action: DashboardAction, voter: string): Promise<void> {
  const spec = ACTIONS[action];
  if (!(await confirmAction(`${spec.label} ${voter}? This ${spec.effect}.`, `${spec.label} ${voter}`)))
    return;
  notify(`${spec.label} ${voter}…`, false);
  try {
    const response = await fetch(`./api/voters/${encodeURIComponent(voter)}/${action}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    const reply = (await response.json()) as ActionReply;
    notify(reply.ok ? reply.message : `${reply.message} [${reply.code}]`, !reply.ok);
  } catch (err) {
    notify(`${spec.label} ${voter} failed: ${err instanceof Error ? err.message : String(err)}`, true);
  }
}
