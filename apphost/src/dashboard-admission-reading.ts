import type { AdmissionStatus } from "@keyload/client";
import type { AdmissionLimits, AdmissionUsage, RefusalTotals } from "./dashboard-messages.js";
import { readSamples } from "./prometheus-counters.js";

/**
 * The voters' admission metrics (node/src/http/http-metrics.ts, node/src/voter/voter-metrics.ts).
 * /metrics spends no HTTP slot, so it answers even when the data pool is full, when the admission
 * status (which needs a data slot of its own) is refused: usage is read there, the limits from the
 * status.
 */
const HTTP_REFUSALS = "keyload_http_admission_rejections_total";
const COMMAND_REFUSALS = "keyload_command_admission_rejections_total";
const COMMANDS = "keyload_command_admission_commands";
const RETAINED = "keyload_command_admission_retained_bytes";
const REQUESTS = "keyload_http_admission_requests";
const MODELED = "keyload_http_admission_modeled_bytes";
const READ = new Set([HTTP_REFUSALS, COMMAND_REFUSALS, COMMANDS, RETAINED, REQUESTS, MODELED]);

/** Which usage each gauge metric and lane (or pool) is. */
const USAGE_OF: Readonly<Record<string, keyof AdmissionUsage>> = {
  [`${COMMANDS}/data`]: "dataCommands",
  [`${RETAINED}/data`]: "dataRetainedBytes",
  [`${COMMANDS}/control`]: "controlCommands",
  [`${RETAINED}/control`]: "controlRetainedBytes",
  [`${REQUESTS}/data`]: "dataRequests",
  [`${MODELED}/data`]: "dataModeledBytes",
  [`${REQUESTS}/control`]: "controlRequests",
  [`${MODELED}/control`]: "controlModeledBytes",
};

export interface MetricsReading {
  /** Null when the voter's metrics lack any of the usage gauges. */
  readonly usage: AdmissionUsage | null;
  /** Refusals so far, keyed `governor/lane/reason`. */
  readonly refusals: RefusalTotals;
}

/** A voter's admission usage and refusal counters from its /metrics. */
export function metricsReading(metrics: string): MetricsReading {
  const usage: Partial<Record<keyof AdmissionUsage, number>> = {};
  const refusals: Record<string, number> = {};
  for (const sample of readSamples(metrics, READ)) {
    const lane = sample.labels.pool ?? sample.labels.lane ?? "data";
    if (sample.name === HTTP_REFUSALS || sample.name === COMMAND_REFUSALS) {
      const governor = sample.name === HTTP_REFUSALS ? "http" : "command";
      const key = `${governor}/${lane}/${sample.labels.reason ?? "unknown"}`;
      refusals[key] = (refusals[key] ?? 0) + sample.value;
      continue;
    }
    const field = USAGE_OF[`${sample.name}/${lane}`];
    if (field !== undefined) usage[field] = sample.value;
  }
  const complete = Object.values(USAGE_OF).every((field) => usage[field] !== undefined);
  return { usage: complete ? (usage as AdmissionUsage) : null, refusals };
}

/** The limits the gauges are drawn against, from a voter's admission status (contract section 7). */
export function admissionLimits(status: AdmissionStatus): AdmissionLimits {
  const command = status.commandAdmission.limits;
  const http = status.httpAdmission.limits;
  return {
    dataCommands: command.maxCommands,
    dataRetainedBytes: command.maxRetainedBytes,
    controlCommands: command.controlMaxCommands,
    controlRetainedBytes: command.controlMaxRetainedBytes,
    dataRequests: http.maxRequests,
    dataModeledBytes: http.maxModeledBytes,
    controlRequests: http.controlMaxRequests,
    controlModeledBytes: http.controlMaxModeledBytes,
  };
}
