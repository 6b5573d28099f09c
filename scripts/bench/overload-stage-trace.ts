import { voterMetricsText } from "./voter-metrics-text.js";

/**
 * Where a command's time went on the leader, from its `keyload_command_stage_seconds{lane,stage}`
 * histogram (the stages are documented beside the histogram in node/src/admission/command-stages.ts):
 * scraped before and after a phase, the difference gives each stage's count, mean and an estimated p99
 * (the upper bound of the bucket holding it) over that phase alone.
 */

const STAGES = ["edge", "queue", "replicate", "apply", "respond"] as const;
type Lane = "data" | "control";

/** Cumulative bucket counts by `lane/stage`, plus each series' sum and count. */
export interface StageScrape {
  readonly buckets: Map<string, Map<number, number>>;
  readonly sums: Map<string, number>;
}

export interface StageFigure {
  readonly stage: string;
  readonly count: number;
  readonly meanMs: number;
  /** The upper bound of the bucket holding the 99th percentile; Infinity beyond the last bound. */
  readonly p99Ms: number;
}

export function parseStageHistogram(text: string): StageScrape {
  const buckets = new Map<string, Map<number, number>>();
  const sums = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^keyload_command_stage_seconds_(bucket|sum)\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const key = `${labels.lane}/${labels.stage}`;
    if (match[1] === "sum") {
      sums.set(key, Number(match[3]));
      continue;
    }
    const le = labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(labels.le);
    const series = buckets.get(key) ?? new Map<number, number>();
    buckets.set(key, series);
    series.set(le, Number(match[3]));
  }
  return { buckets, sums };
}

export async function scrapeStages(httpUrl: string, apiKey: string): Promise<StageScrape> {
  return parseStageHistogram(await voterMetricsText(httpUrl, apiKey));
}

/** Each stage of `lane` between two scrapes of the same voter. */
export function stagesBetween(before: StageScrape, after: StageScrape, lane: Lane): StageFigure[] {
  return STAGES.map((stage) => {
    const key = `${lane}/${stage}`;
    const b = before.buckets.get(key) ?? new Map<number, number>();
    const a = after.buckets.get(key) ?? new Map<number, number>();
    const bounds = [...a.keys()].sort((x, y) => x - y);
    const count = (a.get(Number.POSITIVE_INFINITY) ?? 0) - (b.get(Number.POSITIVE_INFINITY) ?? 0);
    const sumSeconds = (after.sums.get(key) ?? 0) - (before.sums.get(key) ?? 0);
    let p99Ms = Number.NaN;
    for (const le of bounds) {
      if ((a.get(le) ?? 0) - (b.get(le) ?? 0) >= Math.ceil(0.99 * count)) {
        p99Ms = le * 1000;
        break;
      }
    }
    return { stage, count, meanMs: count > 0 ? (sumSeconds / count) * 1000 : Number.NaN, p99Ms };
  });
}

/** "edge 0.4/1 · queue 120/500 · ..." (mean / p99 bucket bound, ms). */
export function describeStages(figures: readonly StageFigure[]): string {
  const n = (v: number): string => (Number.isFinite(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(0)) : "—");
  return figures
    .filter((f) => f.count > 0)
    .map((f) => `${f.stage} ${n(f.meanMs)}/${f.p99Ms === Number.POSITIVE_INFINITY ? ">10000" : n(f.p99Ms)}`)
    .join(" · ");
}
