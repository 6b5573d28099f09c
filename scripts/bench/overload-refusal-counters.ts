import { voterMetricsText } from "./voter-metrics-text.js";

/**
 * The voters' own count of admission refusals, from the counters of their `/metrics`
 * (`keyload_http_admission_rejections_total{pool,reason}` and
 * `keyload_command_admission_rejections_total{lane,reason}`), summed over the voters. A client that
 * retries refusals inside its library never sees most of them; the voters count every one.
 */

const COUNTERS: Readonly<Record<string, string>> = {
  keyload_http_admission_rejections_total: "http",
  keyload_command_admission_rejections_total: "command",
};

/** Refusals by `governor/lane/reason` (for example `http/data/TenantRequests`). */
export type RefusalCounts = Record<string, number>;

export function parseRefusalCounters(text: string): RefusalCounts {
  const counts: RefusalCounts = {};
  for (const line of text.split("\n")) {
    const match = /^(\w+)\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!match) continue;
    const governor = COUNTERS[match[1]!];
    if (governor === undefined) continue;
    const labels = Object.fromEntries(
      [...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!] as const),
    );
    const key = `${governor}/${labels.pool ?? labels.lane ?? "?"}/${labels.reason ?? "?"}`;
    counts[key] = (counts[key] ?? 0) + Number(match[3]);
  }
  return counts;
}

/** The counters of every voter, summed. */
export async function scrapeRefusals(httpUrls: readonly string[], apiKey: string): Promise<RefusalCounts> {
  const total: RefusalCounts = {};
  await Promise.all(
    httpUrls.map(async (url) => {
      const counts = parseRefusalCounters(await voterMetricsText(url, apiKey));
      for (const [key, n] of Object.entries(counts)) total[key] = (total[key] ?? 0) + n;
    }),
  );
  return total;
}

/** What was counted between two scrapes, without the reasons that did not move. */
export function refusalsBetween(before: RefusalCounts, after: RefusalCounts): RefusalCounts {
  const delta: RefusalCounts = {};
  for (const [key, n] of Object.entries(after)) {
    const d = n - (before[key] ?? 0);
    if (d > 0) delta[key] = d;
  }
  return delta;
}
