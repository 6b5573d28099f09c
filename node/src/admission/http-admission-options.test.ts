import { describe, expect, it } from "vitest";
import { AdmissionOptionError } from "./admission-errors.js";
import {
  HTTP_ADMISSION_PROPERTIES,
  httpAdmissionLimitsView,
  resolveHttpAdmissionOptions,
} from "./http-admission-options.js";

describe("HTTP admission options", () => {
  it("defaults to the contract's limits", () => {
    expect(resolveHttpAdmissionOptions()).toEqual({
      MaxRequests: 32,
      MaxModeledBytes: 1073741824,
      MaxRequestsPerTenant: 16,
      MaxRequestsPerPrincipal: 8,
      HeavyReadBytes: 67108864,
      DataRequestBytes: 8388608,
      MaxDataBodyBytes: 8388608,
      ControlMaxRequests: 16,
      ControlMaxModeledBytes: 8388608,
      ControlMaxRequestsPerTenant: 8,
      ControlMaxRequestsPerPrincipal: 8,
      MaxControlBodyBytes: 65536,
    });
    expect(HTTP_ADMISSION_PROPERTIES.map((p) => p.name)).toHaveLength(12);
  });

  it("refuses an invalid value, naming the key", () => {
    expect(() => resolveHttpAdmissionOptions({ ControlMaxModeledBytes: "lots" })).toThrow(
      AdmissionOptionError,
    );
    expect(() => resolveHttpAdmissionOptions({ MaxRequests: 0 })).toThrow(
      "KeyLoad:HttpAdmission:MaxRequests must be a positive integer, got 0",
    );
  });

  it("has a camelCase view for the status JSON", () => {
    const view = httpAdmissionLimitsView(resolveHttpAdmissionOptions({ MaxRequests: "7" }));
    expect(view).toMatchObject({
      maxRequests: 7,
      maxModeledBytes: 1073741824,
      heavyReadBytes: 67108864,
      dataRequestBytes: 8388608,
      maxDataBodyBytes: 8388608,
      controlMaxRequests: 16,
      maxControlBodyBytes: 65536,
    });
    expect(Object.keys(view)).toHaveLength(12);
  });
});
