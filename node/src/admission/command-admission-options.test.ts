import { describe, expect, it } from "vitest";
import { AdmissionOptionError } from "./admission-errors.js";
import {
  COMMAND_ADMISSION_DEFAULTS,
  COMMAND_ADMISSION_PROPERTIES,
  commandAdmissionLimitsView,
  resolveCommandAdmissionOptions,
} from "./command-admission-options.js";

describe("command admission options", () => {
  it("defaults to the contract's limits", () => {
    expect(COMMAND_ADMISSION_DEFAULTS).toEqual({
      MaxCommands: 256,
      MaxRetainedBytes: 134217728,
      MaxCommandsPerTenant: 128,
      MaxCommandsPerPrincipal: 64,
      ControlMaxCommands: 16,
      ControlMaxRetainedBytes: 2097152,
      ControlMaxCommandsPerTenant: 8,
      ControlMaxCommandsPerPrincipal: 8,
      ControlMaxPayloadBytes: 65536,
      MaxConsecutiveControl: 8,
    });
  });

  it("is a table a configuration loader can iterate", () => {
    const fromConfig: Record<string, string> = {};
    for (const property of COMMAND_ADMISSION_PROPERTIES)
      fromConfig[property.name] = String(property.default * 2);
    const limits = resolveCommandAdmissionOptions(fromConfig);
    expect(limits.MaxCommands).toBe(512);
    expect(limits.MaxConsecutiveControl).toBe(16);
  });

  it("takes numbers or configuration text and keeps defaults for the rest", () => {
    const limits = resolveCommandAdmissionOptions({ MaxRetainedBytes: " 1048576 ", ControlMaxCommands: 4 });
    expect(limits.MaxRetainedBytes).toBe(1048576);
    expect(limits.ControlMaxCommands).toBe(4);
    expect(limits.MaxCommands).toBe(256);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, "", "12abc", "1e3", "-5", "0x10"])(
    "refuses %s, naming the key",
    (value) => {
      const attempt = () => resolveCommandAdmissionOptions({ MaxCommandsPerPrincipal: value });
      expect(attempt).toThrow(AdmissionOptionError);
      expect(attempt).toThrow(/^KeyLoad:CommandAdmission:MaxCommandsPerPrincipal must be a positive integer/);
      try {
        attempt();
      } catch (error) {
        expect(error).toMatchObject({
          key: "KeyLoad:CommandAdmission:MaxCommandsPerPrincipal",
          code: "AdmissionInvalidOption",
        });
      }
    },
  );

  it("has a camelCase view for the status JSON", () => {
    const view = commandAdmissionLimitsView(resolveCommandAdmissionOptions({ MaxCommands: 3 }));
    expect(Object.keys(view)).toEqual([
      "maxCommands",
      "maxRetainedBytes",
      "maxCommandsPerTenant",
      "maxCommandsPerPrincipal",
      "controlMaxCommands",
      "controlMaxRetainedBytes",
      "controlMaxCommandsPerTenant",
      "controlMaxCommandsPerPrincipal",
      "controlMaxPayloadBytes",
      "maxConsecutiveControl",
    ]);
    expect(view.maxCommands).toBe(3);
    expect(view.controlMaxPayloadBytes).toBe(65536);
  });

  it("quotes text in the message and shows numbers as they are", () => {
    expect(() => resolveCommandAdmissionOptions({ MaxCommands: "ten" })).toThrow('got "ten"');
    expect(() => resolveCommandAdmissionOptions({ MaxCommands: Number.NaN })).toThrow("got NaN");
  });

  it("resolves to a frozen object", () => {
    expect(Object.isFrozen(resolveCommandAdmissionOptions())).toBe(true);
  });
});
