import type { CommandAdmissionGovernor, CommandAdmissionStatus } from "./command-admission-governor.js";
import type { HttpAdmissionGovernor, HttpAdmissionStatus } from "./http-admission-governor.js";

/** The body of `GET /v1/admin/admission` (contract section 7). */
export interface AdmissionStatus {
  readonly nodeId: string;
  readonly commandAdmission: CommandAdmissionStatus;
  readonly httpAdmission: HttpAdmissionStatus;
}

/**
 * A snapshot of both governors of one voter. Verified scopes list only principals that hold a
 * reservation now, so an idle node reports zero usage and no scopes but the status request's own.
 */
export function admissionStatus(
  nodeId: string,
  commands: CommandAdmissionGovernor,
  http: HttpAdmissionGovernor,
): AdmissionStatus {
  return { nodeId, commandAdmission: commands.status(), httpAdmission: http.status() };
}
