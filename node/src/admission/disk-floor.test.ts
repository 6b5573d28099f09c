import { ResourceExhaustedError } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { AdmissionRefusal } from "./admission-refusal.js";
import { CommandAdmissionGovernor, type CommandAdmissionRequest } from "./command-admission-governor.js";
import type { CommandReservation } from "./command-reservation.js";
import { DiskFloor, type DiskFloorSettings } from "./disk-floor.js";
import { payloadSize } from "./payload-accounting.js";

const MiB = 1024 * 1024;
const SETTINGS: DiskFloorSettings = {
  softFloorBytes: 0,
  marginBytes: 100 * MiB,
  hardFloorBytes: 40 * MiB,
  probeIntervalMs: 2500,
};
const RESERVE = 50 * MiB;

function request(lane: "data" | "control"): CommandAdmissionRequest {
  return { lane, tenantId: "t1", principalId: "p1", payload: payloadSize('{"value":1}') };
}

function admitted(outcome: CommandReservation | AdmissionRefusal): CommandReservation {
  if (outcome instanceof AdmissionRefusal) throw new Error(`refused: ${outcome.message}`);
  return outcome;
}

function refusedError(outcome: CommandReservation | AdmissionRefusal): ResourceExhaustedError {
  if (!(outcome instanceof AdmissionRefusal)) throw new Error("admitted");
  return outcome.toError("cmd-1");
}

describe("DiskFloor in command admission", () => {
  it("below the soft floor refuses data commands with DiskFloor and admits control work", () => {
    const floor = new DiskFloor(SETTINGS);
    const governor = new CommandAdmissionGovernor({}, floor);
    // The derived soft floor: the compaction reserve plus the margin.
    expect(floor.update({ freeBytes: 150 * MiB - 1, reserveBytes: RESERVE })).toBe("soft");

    const error = refusedError(governor.tryAdmit(request("data")));
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect([error.status, error.reason, error.commandId, error.retryAfterSeconds]).toEqual([
      429,
      "DiskFloor",
      "cmd-1",
      3,
    ]);
    expect(error.details).toEqual({
      governor: "command",
      lane: "data",
      limit: "SoftFloorBytes",
      limitValue: 150 * MiB,
      freeBytes: 150 * MiB - 1,
    });
    // Refused before the lane counted anything.
    expect(governor.usage("data").commands).toBe(0);

    admitted(governor.tryAdmit(request("control"))).release();
    expect(floor.status()).toEqual({
      freeBytes: 150 * MiB - 1,
      reserveBytes: RESERVE,
      softFloorBytes: 150 * MiB,
      hardFloorBytes: 40 * MiB,
      state: "soft",
    });
  });

  it("below the hard floor refuses control work too, as DiskHardFloor: DiskFloor always admits it", () => {
    const floor = new DiskFloor(SETTINGS);
    const governor = new CommandAdmissionGovernor({}, floor);
    expect(floor.update({ freeBytes: 40 * MiB - 1, reserveBytes: RESERVE })).toBe("hard");

    const control = refusedError(governor.tryAdmit(request("control")));
    expect(control.reason).toBe("DiskHardFloor");
    expect(control.details).toMatchObject({ governor: "command", lane: "control", limit: "HardFloorBytes" });
    const data = refusedError(governor.tryAdmit(request("data")));
    expect(data.reason).toBe("DiskFloor");
    expect(data.details).toMatchObject({ lane: "data", limit: "HardFloorBytes", limitValue: 40 * MiB });
    expect(governor.usage("control").commands).toBe(0);
  });

  it("admits again once the space comes back", () => {
    const floor = new DiskFloor(SETTINGS);
    const governor = new CommandAdmissionGovernor({}, floor);
    floor.update({ freeBytes: MiB, reserveBytes: RESERVE });
    expect(governor.tryAdmit(request("data"))).toBeInstanceOf(AdmissionRefusal);
    expect(governor.tryAdmit(request("control"))).toBeInstanceOf(AdmissionRefusal);

    expect(floor.update({ freeBytes: 150 * MiB, reserveBytes: RESERVE })).toBe("ok");
    admitted(governor.tryAdmit(request("data"))).release();
    admitted(governor.tryAdmit(request("control"))).release();
  });

  it("follows the reserve as the state grows, and a configured soft floor instead when one is set", () => {
    const derived = new DiskFloor(SETTINGS);
    expect(derived.update({ freeBytes: 200 * MiB, reserveBytes: RESERVE })).toBe("ok");
    // The same free space no longer leaves room for a snapshot of a larger state.
    expect(derived.update({ freeBytes: 200 * MiB, reserveBytes: 101 * MiB })).toBe("soft");

    const fixed = new DiskFloor({ ...SETTINGS, softFloorBytes: 300 * MiB });
    expect(fixed.update({ freeBytes: 250 * MiB, reserveBytes: 0 })).toBe("soft");
    expect(fixed.status().softFloorBytes).toBe(300 * MiB);
  });

  it("never puts the soft floor under the hard one", () => {
    const floor = new DiskFloor({ ...SETTINGS, marginBytes: 0 });
    floor.update({ freeBytes: 45 * MiB, reserveBytes: MiB });
    expect(floor.status()).toMatchObject({ softFloorBytes: 40 * MiB, state: "ok" });
  });

  it("admits everything before the first measurement", () => {
    const floor = new DiskFloor(SETTINGS);
    const governor = new CommandAdmissionGovernor({}, floor);
    admitted(governor.tryAdmit(request("data"))).release();
    expect(floor.status()).toMatchObject({ freeBytes: null, reserveBytes: null, state: "ok" });
  });
});
