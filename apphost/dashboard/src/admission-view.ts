import type { AdmissionLimits, AdmissionPoint, DashboardVoter } from "../../src/dashboard-messages.js";
import { h, setText } from "./dom.js";
import { bytes } from "./format.js";
import { LineChart } from "./line-chart.js";

type Measure = keyof AdmissionLimits;

const GROUPS: readonly {
  title: string;
  gauges: readonly { key: Measure; label: string; inBytes: boolean }[];
}[] = [
  {
    title: "Command lanes",
    gauges: [
      { key: "dataCommands", label: "data commands", inBytes: false },
      { key: "dataRetainedBytes", label: "data retained", inBytes: true },
      { key: "controlCommands", label: "control commands", inBytes: false },
      { key: "controlRetainedBytes", label: "control retained", inBytes: true },
    ],
  },
  {
    title: "HTTP pools",
    gauges: [
      { key: "dataRequests", label: "data requests", inBytes: false },
      { key: "dataModeledBytes", label: "data modeled", inBytes: true },
      { key: "controlRequests", label: "control requests", inBytes: false },
      { key: "controlModeledBytes", label: "control modeled", inBytes: true },
    ],
  },
];

/** Line colours for refusal reasons, in the order they first appear. */
const TONES = ["tone-1", "tone-2", "tone-3", "tone-4", "tone-5", "tone-6"];

interface Gauge {
  readonly element: HTMLElement;
  readonly fill: HTMLElement;
  readonly text: HTMLElement;
  readonly chart: LineChart;
}

interface Card {
  readonly status: HTMLElement;
  readonly gauges: ReadonlyMap<Measure, Gauge>;
  readonly refusals: LineChart;
  readonly legend: HTMLElement;
  readonly tones: Map<string, string>;
}

/** Refusals per second between consecutive readings, per `governor/lane/reason`. */
function refusalRates(points: readonly AdmissionPoint[]): Map<string, (number | null)[]> {
  const rates = new Map<string, (number | null)[]>();
  points.forEach((point, i) => {
    const previous = points[i - 1];
    for (const key of Object.keys(point.refusals ?? {})) if (!rates.has(key)) rates.set(key, []);
    for (const [key, values] of rates) {
      const now = point.refusals?.[key];
      const before = previous?.refusals?.[key];
      // A restarted voter counts from zero again: no rate across that reading.
      values.push(
        previous === undefined || now === undefined || before === undefined || now < before
          ? null
          : ((now - before) * 1000) / Math.max(1, point.at - previous.at),
      );
    }
  });
  return rates;
}

/** Each voter's admission usage against its limits: a gauge and a small chart per measure, and refusals. */
export class AdmissionView {
  private readonly cards = new Map<string, Card>();

  constructor(
    private readonly container: HTMLElement,
    private readonly points: number,
  ) {}

  update(voters: readonly DashboardVoter[], history: ReadonlyMap<string, readonly AdmissionPoint[]>): void {
    for (const voter of voters) {
      const card = this.cards.get(voter.name) ?? this.addCard(voter.name);
      const points = history.get(voter.name) ?? [];
      setText(
        card.status,
        voter.admission !== null
          ? voter.role
          : voter.state !== "running"
            ? `${voter.state}: no reading`
            : `no reading: ${voter.admissionError ?? "no answer"}`,
      );
      for (const [key, gauge] of card.gauges) this.updateGauge(gauge, key, voter, points);
      this.updateRefusals(card, points);
    }
  }

  private updateGauge(
    gauge: Gauge,
    key: Measure,
    voter: DashboardVoter,
    points: readonly AdmissionPoint[],
  ): void {
    const spec = GROUPS.flatMap((g) => g.gauges).find((g) => g.key === key)!;
    const reading = voter.admission;
    const used = reading?.usage[key] ?? null;
    const limit = reading?.limits[key] ?? null;
    const fraction = used === null || limit === null || limit === 0 ? 0 : Math.min(1, used / limit);
    gauge.fill.style.width = `${(fraction * 100).toFixed(1)}%`;
    gauge.element.dataset.used = used === null ? "" : String(used);
    gauge.element.dataset.level = fraction >= 0.9 ? "high" : fraction >= 0.6 ? "raised" : "normal";
    const show = (n: number): string => (spec.inBytes ? bytes(n) : String(n));
    setText(gauge.text, used === null || limit === null ? "–" : `${show(used)} / ${show(limit)}`);
    gauge.chart.update(
      [{ key, tone: "tone-1", values: points.map((p) => (p.usage === null ? null : p.usage[key])) }],
      limit ?? undefined,
    );
  }

  private updateRefusals(card: Card, points: readonly AdmissionPoint[]): void {
    const rates = refusalRates(points);
    const totals = points.at(-1)?.refusals ?? {};
    // Only reasons that have refused something: every counter exists from zero.
    const shown = [...rates].filter(([key]) => (totals[key] ?? 0) > 0);
    for (const [key] of shown)
      if (!card.tones.has(key)) card.tones.set(key, TONES[card.tones.size % TONES.length]!);
    card.refusals.update(shown.map(([key, values]) => ({ key, tone: card.tones.get(key)!, values })));
    card.legend.replaceChildren(
      ...(shown.length === 0
        ? [h("li", { class: "muted" }, "no refusals")]
        : shown.map(([key]) =>
            h("li", { class: card.tones.get(key)!, "data-reason": key }, `${key} ${totals[key] ?? 0}`),
          )),
    );
  }

  private addCard(name: string): Card {
    const gauges = new Map<Measure, Gauge>();
    const groups = GROUPS.map((group) =>
      h(
        "div",
        { class: "gauge-group" },
        h("h4", {}, group.title),
        ...group.gauges.map((spec) => {
          const fill = h("div", { class: "fill" });
          const text = h("span", { class: "gauge-text" });
          const chart = new LineChart(this.points);
          const element = h(
            "div",
            { class: "gauge", "data-gauge": `${name}:${spec.key}` },
            h("span", { class: "gauge-label" }, spec.label),
            h("div", { class: "bar" }, fill),
            text,
            chart.element,
          );
          gauges.set(spec.key, { element, fill, text, chart });
          return element;
        }),
      ),
    );
    const status = h("span", { class: "muted" });
    const refusals = new LineChart(this.points, 320, 48);
    const legend = h("ul", { class: "legend" });
    this.container.append(
      h(
        "article",
        { class: "card", "data-voter": name },
        h("h3", {}, name, " ", status),
        ...groups,
        h("div", { class: "gauge-group" }, h("h4", {}, "Refusals per second"), refusals.element, legend),
      ),
    );
    const card: Card = { status, gauges, refusals, legend, tones: new Map() };
    this.cards.set(name, card);
    return card;
  }
}
