import type { DashboardAction, DashboardVoter } from "../../src/dashboard-messages.js";
import { ACTIONS, runAction } from "./actions.js";
import { h, setText } from "./dom.js";
import { orDash } from "./format.js";

const COLUMNS = [
  ["name", "Name"],
  ["state", "State"],
  ["health", "Health"],
  ["role", "Role"],
  ["member", "Member"],
  ["term", "Term"],
  ["commitIndex", "Commit"],
  ["appliedIndex", "Applied"],
  ["pid", "PID"],
  ["endpoints", "Endpoints"],
  ["env", "Environment"],
  ["actions", "Actions"],
] as const;

type Column = (typeof COLUMNS)[number][0];

interface Row {
  readonly cells: Readonly<Record<Column, HTMLTableCellElement>>;
  readonly buttons: ReadonlyMap<DashboardAction, HTMLButtonElement>;
  envText: string;
}

/** The voters as a table, one row each, updated in place; each row has its actions. */
export class ResourcesView {
  private readonly body = h("tbody");
  private readonly rows = new Map<string, Row>();

  constructor(
    container: HTMLElement,
    private readonly actions: readonly DashboardAction[],
  ) {
    container.replaceChildren(
      h(
        "table",
        { class: "resources" },
        h("thead", {}, h("tr", {}, ...COLUMNS.map(([, title]) => h("th", {}, title)))),
        this.body,
      ),
    );
  }

  update(voters: readonly DashboardVoter[]): void {
    for (const voter of voters) {
      const row = this.rows.get(voter.name) ?? this.addRow(voter.name);
      const { cells } = row;
      setText(cells.name, voter.name);
      this.badge(cells.state, voter.state);
      this.badge(cells.health, voter.health);
      this.badge(cells.role, voter.role);
      setText(cells.member, orDash(voter.member));
      setText(cells.term, orDash(voter.term));
      setText(cells.commitIndex, orDash(voter.commitIndex));
      setText(cells.appliedIndex, orDash(voter.appliedIndex));
      setText(cells.pid, orDash(voter.pid));
      setText(cells.endpoints, `${voter.httpUrl}\npeer ${voter.peerAddress}`);
      this.environment(row, voter.forwardedEnv);
      for (const [action, button] of row.buttons) button.disabled = !ACTIONS[action].applies(voter);
    }
  }

  private badge(cell: HTMLTableCellElement, value: string): void {
    setText(cell, value);
    cell.dataset.value = value;
  }

  private environment(row: Row, env: Readonly<Record<string, string>>): void {
    const entries = Object.entries(env);
    const text = entries.map(([k, v]) => `${k}=${v}`).join("\n");
    if (text === row.envText && row.cells.env.childNodes.length > 0) return;
    row.envText = text;
    row.cells.env.replaceChildren(
      entries.length === 0
        ? h("span", { class: "muted" }, "none forwarded")
        : h(
            "details",
            {},
            h("summary", {}, `${entries.length} forwarded`),
            h("ul", { class: "env" }, ...entries.map(([k, v]) => h("li", {}, h("code", {}, `${k}=${v}`)))),
          ),
    );
  }

  private addRow(name: string): Row {
    const cells = Object.fromEntries(COLUMNS.map(([key]) => [key, h("td", { "data-field": key })])) as Record<
      Column,
      HTMLTableCellElement
    >;
    const buttons = new Map(
      this.actions.map((action) => {
        const button = h("button", { type: "button", "data-action": action }, ACTIONS[action].label);
        button.addEventListener("click", () => void runAction(action, name));
        return [action, button] as const;
      }),
    );
    cells.actions.append(...buttons.values());
    this.body.append(h("tr", { "data-voter": name }, ...Object.values(cells)));
    const row: Row = { cells, buttons, envText: "" };
    this.rows.set(name, row);
    return row;
  }
}
