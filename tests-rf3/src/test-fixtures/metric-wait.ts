import type { KeyLoadClient } from "@keyload/client";
import { metricOf } from "./voter-metrics.js";
import { errorLine, type WaitOptions, waitUntil } from "./wait-until.js";

/**
 * Waits until a voter's `/metrics` sample `name{labels}` equals `expected`. `/metrics` is neither a
 * quorum read nor in an admission pool, so it answers while no quorum does and while the pools are full.
 */
export async function waitForMetric(
  client: KeyLoadClient,
  endpoint: string,
  name: string,
  labels: Readonly<Record<string, string>>,
  expected: number,
  options?: WaitOptions,
): Promise<void> {
  await waitUntil(
    `${endpoint} to report ${name}${JSON.stringify(labels)} = ${expected}`,
    async (seen) => {
      try {
        const value = await metricOf(client, endpoint, name, labels);
        seen(value);
        return value === expected ? true : undefined;
      } catch (error) {
        seen(errorLine(error));
        return undefined;
      }
    },
    options,
  );
}

/** Waits until a voter holds `commands` command reservations in its data lane. */
export function waitForDataCommands(
  client: KeyLoadClient,
  endpoint: string,
  commands: number,
): Promise<void> {
  return waitForMetric(client, endpoint, "keyload_command_admission_commands", { lane: "data" }, commands);
}
