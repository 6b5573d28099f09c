import type { KeyLoadClient } from "@keyload/client";

/**
 * One sample of a voter's `/metrics`, e.g. `keyload_command_admission_commands{lane="data"}`. The
 * metrics are the voter's own state, answered without a quorum read or an HTTP admission slot, so a
 * test can watch a voter whose followers are gone.
 */
export async function metricOf(
  client: KeyLoadClient,
  endpoint: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): Promise<number> {
  const text = await client.metrics({ endpoint });
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split("\n")) {
    // `name{a="x",b="y"} value` or `name value`; a label value may itself hold braces.
    const sample = /^(\S+?)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample?.[1] !== name) continue;
    const present = sample[2] ?? "";
    if (wanted.every((label) => present.includes(label))) return Number(sample[3]);
  }
  throw new Error(`${endpoint}/metrics has no sample ${name}${JSON.stringify(labels)}`);
}
