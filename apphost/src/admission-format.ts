import type { AdmissionStatus } from "@keyload/client";
import type { VoterAdmission } from "./voter-admission.js";

/** What `status` shows of a voter's admission: each lane's commands and each HTTP pool's requests, used/limit. */
export interface AdmissionUsage {
  readonly dataLane: string;
  readonly controlLane: string;
  readonly httpData: string;
  readonly httpControl: string;
}

export function admissionUsage(status: AdmissionStatus): AdmissionUsage {
  const { commandAdmission: command, httpAdmission: http } = status;
  return {
    dataLane: `${command.data.commands}/${command.limits.maxCommands}`,
    controlLane: `${command.control.commands}/${command.limits.controlMaxCommands}`,
    httpData: `${http.data.requests}/${http.limits.maxRequests}`,
    httpControl: `${http.control.requests}/${http.limits.controlMaxRequests}`,
  };
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"] as const;

export function formatBytes(bytes: number | null): string {
  if (bytes === null) return "-";
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

function commandLane(
  name: string,
  usage: AdmissionStatus["commandAdmission"]["data"],
  max: number,
  maxBytes: number,
): string {
  return (
    `${name.padEnd(8)} ${usage.commands}/${max} commands, ${formatBytes(usage.retainedBytes)}/${formatBytes(maxBytes)} retained, ` +
    `${usage.queued} queued, ${usage.active} active`
  );
}

function httpPool(
  name: string,
  usage: AdmissionStatus["httpAdmission"]["data"],
  max: number,
  maxBytes: number,
): string {
  return `${name.padEnd(8)} ${usage.requests}/${max} requests, ${formatBytes(usage.modeledBytes)}/${formatBytes(maxBytes)} modeled`;
}

/** One voter's admission status for a person: both governors, the verified scopes, the disk and SQLite's limits. */
function formatOne(entry: VoterAdmission): string[] {
  const title = `${entry.name}  ${entry.httpUrl}`;
  const status = entry.admission;
  if (status === null) return [title, `  no answer: ${entry.error}`];
  const { commandAdmission: command, httpAdmission: http, disk, storageLimits } = status;
  const scopes = [
    ...command.verifiedScopes.map(
      (s) =>
        `command ${s.lane} ${s.tenantId}/${s.principalId}: tenant ${s.tenantCommands}, principal ${s.principalCommands}`,
    ),
    ...http.verifiedScopes.map(
      (s) =>
        `http ${s.pool} ${s.tenantId}/${s.principalId}: tenant ${s.tenantRequests}, principal ${s.principalRequests}`,
    ),
  ];
  const sqlite = (Object.keys(storageLimits) as (keyof typeof storageLimits)[]).map((db) => {
    const l = storageLimits[db];
    return `${db} cache ${formatBytes(l.cacheBytes)}, mmap ${formatBytes(l.mmapBytes)}, WAL ${formatBytes(l.walLimitBytes)}`;
  });
  return [
    title,
    "  command admission",
    `    ${commandLane("data", command.data, command.limits.maxCommands, command.limits.maxRetainedBytes)}`,
    `    ${commandLane("control", command.control, command.limits.controlMaxCommands, command.limits.controlMaxRetainedBytes)}`,
    "  http admission",
    `    ${httpPool("data", http.data, http.limits.maxRequests, http.limits.maxModeledBytes)}`,
    `    ${httpPool("control", http.control, http.limits.controlMaxRequests, http.limits.controlMaxModeledBytes)}`,
    `    ${"ingress".padEnd(8)} data ${http.ingress.data}, control ${http.ingress.control}`,
    `  verified scopes${scopes.length === 0 ? ": none" : ""}`,
    ...scopes.map((s) => `    ${s}`),
    `  disk     ${disk.state}: ${formatBytes(disk.freeBytes)} free, reserve ${formatBytes(disk.reserveBytes)}, ` +
      `floors ${formatBytes(disk.softFloorBytes)} (data) and ${formatBytes(disk.hardFloorBytes)} (every write)`,
    "  storage limits",
    ...sqlite.map((s) => `    ${s}`),
  ];
}

/** `admission` for a person: one block per voter. */
export function formatAdmission(entries: readonly VoterAdmission[]): string {
  return entries.map((entry) => formatOne(entry).join("\n")).join("\n\n");
}
