import {
  type AdmissionLimits,
  type AdmissionLimitsView,
  limitsView,
  type PropertyName,
  positiveInteger,
  resolveAdmissionLimits,
} from "./admission-property.js";

export const HTTP_ADMISSION_SECTION = "HttpAdmission";

const MiB = 1024 * 1024;

/** Contract section 5: the HTTP governor's limits, in the order the status JSON lists them. */
export const HTTP_ADMISSION_PROPERTIES = [
  positiveInteger("MaxRequests", 32),
  positiveInteger("MaxModeledBytes", 1024 * MiB),
  positiveInteger("MaxRequestsPerTenant", 16),
  positiveInteger("MaxRequestsPerPrincipal", 8),
  positiveInteger("HeavyReadBytes", 64 * MiB),
  positiveInteger("DataRequestBytes", 8 * MiB),
  positiveInteger("MaxDataBodyBytes", 8 * MiB),
  positiveInteger("ControlMaxRequests", 16),
  positiveInteger("ControlMaxModeledBytes", 8 * MiB),
  positiveInteger("ControlMaxRequestsPerTenant", 8),
  positiveInteger("ControlMaxRequestsPerPrincipal", 8),
  positiveInteger("MaxControlBodyBytes", 64 * 1024),
] as const;

export type HttpAdmissionProperty = PropertyName<typeof HTTP_ADMISSION_PROPERTIES>;
export type HttpAdmissionLimits = AdmissionLimits<HttpAdmissionProperty>;
export type HttpAdmissionLimitsView = AdmissionLimitsView<HttpAdmissionProperty>;
/** Any subset of the limits, as numbers or as configuration text. */
export type HttpAdmissionOptions = Partial<Record<HttpAdmissionProperty, number | string>>;

export function resolveHttpAdmissionOptions(options?: HttpAdmissionOptions): HttpAdmissionLimits {
  return resolveAdmissionLimits(HTTP_ADMISSION_SECTION, HTTP_ADMISSION_PROPERTIES, options);
}

export function httpAdmissionLimitsView(limits: HttpAdmissionLimits): HttpAdmissionLimitsView {
  return limitsView(HTTP_ADMISSION_PROPERTIES, limits);
}
