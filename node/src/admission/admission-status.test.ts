import { describe, expect, it } from "vitest";
import { DEFAULT_STORAGE_LIMITS } from "../fs/sqlite-limits.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import { type AdmissionStatus, admissionStatus } from "./admission-status.js";
import { CommandAdmissionGovernor } from "./command-admission-governor.js";
import { DiskFloor } from "./disk-floor.js";
import { HttpAdmissionGovernor } from "./http-admission-governor.js";
import { payloadSize } from "./payload-accounting.js";

const MiB = 1024 * 1024;

function statusOf(
  nodeId: string,
  commandGovernor: CommandAdmissionGovernor,
  httpGovernor: HttpAdmissionGovernor,
): AdmissionStatus {
  const diskFloor = new DiskFloor({
    softFloorBytes: 0,
    marginBytes: 256 * MiB,
    hardFloorBytes: 64 * MiB,
    probeIntervalMs: 1000,
  });
  diskFloor.update({ freeBytes: 10_000 * MiB, reserveBytes: 3 * MiB });
  return admissionStatus({
    nodeId,
    commandGovernor,
    httpGovernor,
    diskFloor,
    storageLimits: DEFAULT_STORAGE_LIMITS,
  });
}

describe("admissionStatus", () => {
  it("reports an idle node in the contract's shape: limits, zero usage, only the status request's scope", () => {
    const commands = new CommandAdmissionGovernor();
    const http = new HttpAdmissionGovernor();
    // The status request itself: a bodiless data request bound to the bootstrap admin.
    const own = http.reserve({ kind: "data", declaredLength: 0 });
    if (own instanceof AdmissionRefusal) throw new Error("refused");
    expect(own.bind("system", "admin")).toBeUndefined();

    const status = JSON.parse(JSON.stringify(statusOf("voter1", commands, http)));
    expect(status).toEqual({
      nodeId: "voter1",
      commandAdmission: {
        limits: {
          maxCommands: 256,
          maxRetainedBytes: 134217728,
          maxCommandsPerTenant: 128,
          maxCommandsPerPrincipal: 64,
          controlMaxCommands: 16,
          controlMaxRetainedBytes: 2097152,
          controlMaxCommandsPerTenant: 8,
          controlMaxCommandsPerPrincipal: 8,
          controlMaxPayloadBytes: 65536,
          maxConsecutiveControl: 8,
        },
        data: { commands: 0, retainedBytes: 0, queued: 0, active: 0 },
        control: { commands: 0, retainedBytes: 0, queued: 0, active: 0 },
        verifiedScopes: [],
      },
      httpAdmission: {
        limits: {
          maxRequests: 32,
          maxModeledBytes: 1073741824,
          maxRequestsPerTenant: 16,
          maxRequestsPerPrincipal: 8,
          heavyReadBytes: 67108864,
          dataRequestBytes: 8388608,
          maxDataBodyBytes: 8388608,
          controlMaxRequests: 16,
          controlMaxModeledBytes: 8388608,
          controlMaxRequestsPerTenant: 8,
          controlMaxRequestsPerPrincipal: 8,
          maxControlBodyBytes: 65536,
        },
        data: { requests: 1, modeledBytes: 8392704 },
        control: { requests: 0, modeledBytes: 0 },
        ingress: { data: 0, control: 0 },
        verifiedScopes: [
          { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
        ],
      },
      disk: {
        freeBytes: 10_000 * MiB,
        reserveBytes: 3 * MiB,
        softFloorBytes: 259 * MiB,
        hardFloorBytes: 64 * MiB,
        state: "ok",
      },
      storageLimits: {
        log: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
        state: { cacheBytes: 64 * MiB, mmapBytes: 0, walLimitBytes: 16 * MiB },
        search: { cacheBytes: 16 * MiB, mmapBytes: 0, walLimitBytes: 64 * MiB },
      },
    });
  });

  it("lists usage and scopes of both governors while they hold reservations", () => {
    const commands = new CommandAdmissionGovernor({ MaxCommands: 100 });
    const http = new HttpAdmissionGovernor();
    const queued = commands.tryAdmit({
      lane: "data",
      tenantId: "t2",
      principalId: "p1",
      payload: payloadSize("ab"),
    });
    const active = commands.tryAdmit({
      lane: "control",
      tenantId: "t1",
      principalId: "p9",
      payload: payloadSize(""),
    });
    if (queued instanceof AdmissionRefusal || active instanceof AdmissionRefusal) throw new Error("refused");
    active.markActive();
    const unverified = http.reserve({ kind: "control" });
    if (unverified instanceof AdmissionRefusal) throw new Error("refused");

    const status = statusOf("voter2", commands, http);
    expect(status.commandAdmission.limits.maxCommands).toBe(100);
    expect(status.commandAdmission.data).toEqual({
      commands: 1,
      retainedBytes: 4 + 4 + 4096,
      queued: 1,
      active: 0,
    });
    expect(status.commandAdmission.control).toEqual({
      commands: 1,
      retainedBytes: 4096,
      queued: 0,
      active: 1,
    });
    expect(status.commandAdmission.verifiedScopes).toEqual([
      { lane: "data", tenantId: "t2", principalId: "p1", tenantCommands: 1, principalCommands: 1 },
      { lane: "control", tenantId: "t1", principalId: "p9", tenantCommands: 1, principalCommands: 1 },
    ]);
    expect(status.httpAdmission.ingress).toEqual({ data: 0, control: 1 });
    expect(status.httpAdmission.verifiedScopes).toEqual([]);

    queued.release();
    active.release();
    unverified.dispose();
    const idle = statusOf("voter2", commands, http);
    expect(idle.commandAdmission.verifiedScopes).toEqual([]);
    expect(idle.httpAdmission).toMatchObject({
      control: { requests: 0, modeledBytes: 0 },
      ingress: { control: 0 },
    });
  });
});
