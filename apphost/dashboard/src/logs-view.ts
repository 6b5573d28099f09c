import type { LogRow } from "../../src/dashboard-messages.js";
import { h } from "./dom.js";
import { clock } from "./format.js";

const LEVELS: Readonly<Record<number, string>> = {
  10: "trace",
  20: "debug",
  30: "info",
  40: "warn",
  50: "error",
  60: "fatal",
};
/** How many rows the page keeps, and how many of the matching ones it shows. */
const KEEP_ROWS = 5_000;
const SHOW_ROWS = 500;

function levelName(level: number | null): string {
  return level === null ? "" : (LEVELS[level] ?? String(level));
}

function matches(row: LogRow, needle: string): boolean {
  if (needle === "") return true;
  if (row.msg.toLowerCase().includes(needle) || (row.component ?? "").toLowerCase().includes(needle))
    return true;
  return Object.entries(row.fields).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(needle));
}

/**
 * The voters' console: pino's fields as columns (time, voter, level, component, message, any field the
 * reader picks, the rest together), levels coloured, searchable, newest at the bottom.
 */
export class LogsView {
  private rows: LogRow[] = [];
  private readonly search = h("input", {
    type: "search",
    placeholder: "Search messages and fields",
    "aria-label": "Search",
  });
  private readonly voter = h("select", { "aria-label": "Voter" }, h("option", { value: "" }, "all voters"));
  private readonly level = h(
    "select",
    { "aria-label": "Lowest level" },
    ...Object.entries(LEVELS).map(([n, name]) =>
      h("option", n === "30" ? { value: n, selected: "" } : { value: n }, `${name} and above`),
    ),
  );
  private readonly columnPicker = h("div", { class: "column-picker" });
  private readonly head = h("thead");
  private readonly body = h("tbody");
  private readonly count = h("span", { class: "muted" });
  private readonly fieldNames = new Set<string>();
  private readonly columns = new Set<string>();
  private scheduled = false;

  constructor(container: HTMLElement, voters: readonly string[]) {
    this.voter.append(...voters.map((v) => h("option", { value: v }, v)));
    for (const control of [this.search, this.voter, this.level]) {
      control.addEventListener("input", () => this.schedule());
    }
    container.replaceChildren(
      h(
        "div",
        { class: "log-controls" },
        this.search,
        this.voter,
        this.level,
        h("details", {}, h("summary", {}, "Columns"), this.columnPicker),
        this.count,
      ),
      h("div", { class: "log-scroll" }, h("table", { class: "logs" }, this.head, this.body)),
    );
  }

  /** Starts over with these rows, as after the page reconnects. */
  replace(rows: readonly LogRow[]): void {
    this.rows = [];
    this.add(rows);
  }

  add(rows: readonly LogRow[]): void {
    this.rows.push(...rows);
    if (this.rows.length > KEEP_ROWS) this.rows.splice(0, this.rows.length - KEEP_ROWS);
    let newField = false;
    for (const row of rows) {
      for (const key of Object.keys(row.fields)) {
        if (!this.fieldNames.has(key)) {
          this.fieldNames.add(key);
          newField = true;
        }
      }
    }
    if (newField) this.renderPicker();
    this.schedule();
  }

  private renderPicker(): void {
    this.columnPicker.replaceChildren(
      ...[...this.fieldNames].sort().map((name) => {
        const box = h("input", { type: "checkbox", value: name });
        box.checked = this.columns.has(name);
        box.addEventListener("change", () => {
          if (box.checked) this.columns.add(name);
          else this.columns.delete(name);
          this.schedule();
        });
        return h("label", {}, box, name);
      }),
    );
  }

  /** Draws at most once per frame however many lines arrive. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.render();
    });
  }

  private render(): void {
    const needle = this.search.value.trim().toLowerCase();
    const voter = this.voter.value;
    const lowest = Number(this.level.value);
    const shown = this.rows.filter(
      (row) => (voter === "" || row.voter === voter) && (row.level ?? 30) >= lowest && matches(row, needle),
    );
    const visible = shown.slice(-SHOW_ROWS);
    const extra = [...this.columns];
    this.count.textContent = `${shown.length} of ${this.rows.length} lines${shown.length > SHOW_ROWS ? ` (last ${SHOW_ROWS} shown)` : ""}`;
    this.head.replaceChildren(
      h(
        "tr",
        {},
        ...["Time", "Voter", "Level", "Component", "Message", ...extra, "Fields"].map((t) => h("th", {}, t)),
      ),
    );
    const scroller = this.body.closest(".log-scroll");
    const atBottom =
      scroller === null || scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 24;
    this.body.replaceChildren(
      ...visible.map((row) => {
        const rest = Object.entries(row.fields).filter(([k]) => !this.columns.has(k));
        return h(
          "tr",
          { "data-level": levelName(row.level), "data-voter": row.voter },
          h("td", { class: "time" }, clock(row.time)),
          h("td", { class: `voter ${row.voter}` }, row.voter),
          h("td", { class: "level" }, levelName(row.level)),
          h("td", {}, row.component ?? ""),
          h("td", { class: "msg" }, row.msg),
          ...extra.map((k) => h("td", {}, row.fields[k] ?? "")),
          h(
            "td",
            { class: "fields" },
            ...rest.map(([k, v]) => h("span", { class: "field" }, h("b", {}, k), `=${v}`)),
          ),
        );
      }),
    );
    // Follow the newest lines unless the reader has scrolled up to read older ones.
    if (scroller !== null && atBottom) scroller.scrollTop = scroller.scrollHeight;
  }
}
