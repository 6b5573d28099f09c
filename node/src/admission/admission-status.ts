import type { StorageLimits } from "../fs/sqlite-limits.js";
import type { CommandAdmissionGovernor, CommandAdmissionStatus } from "./command-admission-governor.js";
import type { DiskFloor, DiskFloorStatus } from "./disk-floor.js";
import type { HttpAdmissionGovernor, HttpAdmissionStatus } from "./http-admission-governor.js";

/**
 * The body of `GET /v1/admin/admission` (contract section 7), with what this project adds: the disk
 * floor's measurement and the databases' native limits.
 */
export interface AdmissionStatus {
  readonly nodeId: string;
  readonly commandAdmission: CommandAdmissionStatus;
  readonly httpAdmission: HttpAdmissionStatus;
  readonly disk: DiskFloorStatus;
  readonly storageLimits: StorageLimits;
}

/** What one voter's admission status is read from. */
export interface AdmissionSources {
  readonly nodeId: string;
  readonly commandGovernor: CommandAdmissionGovernor;
  readonly httpGovernor: HttpAdmissionGovernor;
  readonly diskFloor: DiskFloor;
  readonly storageLimits: StorageLimits;
}

/**
 * A snapshot of both governors and the disk floor of one voter. Verified scopes list only principals
 * that hold a reservation now, so an idle node reports zero usage and no scopes but the status
 * request's own.
 */
export function admissionStatus(sources: AdmissionSources): AdmissionStatus {
  return {
    nodeId: sources.nodeId,
    commandAdmission: sources.commandGovernor.status(),
    httpAdmission: sources.httpGovernor.status(),
    disk: sources.diskFloor.status(),
    storageLimits: sources.storageLimits,
  };
}
