import { svg } from "./dom.js";

export interface Series {
  readonly key: string;
  /** A CSS class that gives the line its colour. */
  readonly tone: string;
  /** One value per point, oldest first; null for a point with no reading (a gap). */
  readonly values: readonly (number | null)[];
}

/**
 * A small time-series chart in SVG: one polyline per series over the last `points` readings, scaled
 * to `max` (or to the largest value). Redrawn in place.
 */
export class LineChart {
  readonly element: SVGSVGElement;
  private readonly lines = new Map<string, SVGPolylineElement>();

  constructor(
    private readonly points: number,
    private readonly width = 160,
    private readonly height = 36,
  ) {
    this.element = svg("svg", {
      class: "chart",
      viewBox: `0 0 ${width} ${height}`,
      preserveAspectRatio: "none",
      role: "img",
    });
  }

  update(series: readonly Series[], max?: number): void {
    const top = max ?? Math.max(1, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null)));
    const step = this.width / Math.max(1, this.points - 1);
    const seen = new Set<string>();
    for (const s of series) {
      seen.add(s.key);
      let line = this.lines.get(s.key);
      if (line === undefined) {
        line = svg("polyline", { class: `line ${s.tone}` });
        this.lines.set(s.key, line);
        this.element.append(line);
      }
      // The newest reading is at the right edge.
      const offset = this.points - s.values.length;
      const coordinates = s.values.flatMap((v, i) =>
        v === null
          ? []
          : [
              `${((offset + i) * step).toFixed(1)},${(this.height - 1 - (Math.min(v, top) / top) * (this.height - 2)).toFixed(1)}`,
            ],
      );
      line.setAttribute("points", coordinates.join(" "));
    }
    for (const [key, line] of this.lines) {
      if (!seen.has(key)) {
        line.remove();
        this.lines.delete(key);
      }
    }
  }
}
