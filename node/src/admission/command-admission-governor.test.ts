import { ResourceExhaustedError } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { ReservationStateError } from "./admission-errors.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import { CommandAdmissionGovernor, type CommandAdmissionRequest } from "./command-admission-governor.js";
import { CommandReservation } from "./command-reservation.js";
import { payloadSize, retainedBytes } from "./payload-accounting.js";

function data(tenantId: string, principalId: string, payload = "{}"): CommandAdmissionRequest {
  return { lane: "data", tenantId, principalId, payload: payloadSize(payload) };
}

function control(tenantId: string, principalId: string, payload = "{}"): CommandAdmissionRequest {
  return { lane: "control", tenantId, principalId, payload: payloadSize(payload) };
}

function admit(governor: CommandAdmissionGovernor, request: CommandAdmissionRequest): CommandReservation {
  const result = governor.tryAdmit(request);
  if (!(result instanceof CommandReservation)) throw new Error(`expected admission, got ${result.message}`);
  return result;
}

function refusal(governor: CommandAdmissionGovernor, request: CommandAdmissionRequest): AdmissionRefusal {
  const result = governor.tryAdmit(request);
  if (!(result instanceof AdmissionRefusal)) throw new Error("expected a refusal");
  return result;
}

const retained = (text: string): number => retainedBytes(payloadSize(text));

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("CommandAdmissionGovernor", () => {
  it("accounts a command's retained bytes and its scope", () => {
    const governor = new CommandAdmissionGovernor();
    const reservation = admit(governor, data("t1", "p1", "é😀"));
    expect(reservation.retainedBytes).toBe(retained("é😀"));
    expect([reservation.lane, reservation.tenantId, reservation.principalId]).toEqual(["data", "t1", "p1"]);
    expect(governor.usage("data")).toEqual({
      commands: 1,
      retainedBytes: 2 * 3 + 2 * 6 + 4096,
      queued: 1,
      active: 0,
    });
    expect(governor.usage("control")).toEqual({ commands: 0, retainedBytes: 0, queued: 0, active: 0 });
  });

  it("refuses with the reason, lane and limit, as the contract's 429 error", () => {
    const governor = new CommandAdmissionGovernor({ MaxCommands: 1 });
    admit(governor, data("t1", "p1"));
    const refused = refusal(governor, data("t2", "p2"));
    expect(refused).toMatchObject({
      reason: "CommandCount",
      governor: "command",
      lane: "data",
      limit: "MaxCommands",
      limitValue: 1,
      requested: 1,
      inUse: 1,
    });
    const error = refused.toError("cmd-7");
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect(error.status).toBe(429);
    expect(error.retryAfterSeconds).toBe(1);
    expect(error.toBody()).toEqual({
      error: {
        code: "ResourceExhausted",
        reason: "CommandCount",
        message: refused.message,
        commandId: "cmd-7",
        details: {
          governor: "command",
          lane: "data",
          limit: "MaxCommands",
          limitValue: 1,
          requested: 1,
          inUse: 1,
        },
      },
    });
  });

  it("checks count, then bytes, then tenant, then principal", () => {
    const big = "x".repeat(1000);
    const bytes = retained(big);
    const governor = new CommandAdmissionGovernor({
      MaxCommands: 2,
      MaxRetainedBytes: 2 * bytes,
      MaxCommandsPerTenant: 1,
      MaxCommandsPerPrincipal: 1,
    });
    admit(governor, data("t1", "p1", big));
    // Same principal: principal, tenant, bytes and count all still fit but for the tenant and principal.
    expect(refusal(governor, data("t1", "p1")).reason).toBe("TenantCommands");
    admit(governor, data("t2", "p2", big));
    // Now every limit is reached: the count is reported first.
    expect(refusal(governor, data("t1", "p1", big)).reason).toBe("CommandCount");
    const loose = new CommandAdmissionGovernor({
      MaxRetainedBytes: bytes,
      MaxCommandsPerTenant: 1,
      MaxCommandsPerPrincipal: 1,
    });
    admit(loose, data("t1", "p1", big));
    expect(refusal(loose, data("t1", "p1", big))).toMatchObject({
      reason: "CommandBytes",
      limit: "MaxRetainedBytes",
      requested: bytes,
      inUse: bytes,
    });
    const perPrincipal = new CommandAdmissionGovernor({ MaxCommandsPerPrincipal: 1 });
    admit(perPrincipal, data("t1", "p1"));
    expect(refusal(perPrincipal, data("t1", "p1"))).toMatchObject({
      reason: "PrincipalCommands",
      limit: "MaxCommandsPerPrincipal",
      inUse: 1,
    });
  });

  it("refuses a control payload over ControlMaxPayloadBytes UTF-8 bytes before anything else", () => {
    const governor = new CommandAdmissionGovernor({ ControlMaxPayloadBytes: 8, ControlMaxCommands: 1 });
    admit(governor, control("t1", "p1", "12345678"));
    // 3 astral characters are 6 UTF-16 units but 12 UTF-8 bytes.
    expect(refusal(governor, control("t1", "p1", "😀😀😀"))).toMatchObject({
      reason: "ControlPayloadTooLarge",
      lane: "control",
      limit: "ControlMaxPayloadBytes",
      limitValue: 8,
      requested: 12,
    });
    expect(refusal(governor, control("t1", "p1", "1234"))).toMatchObject({ reason: "CommandCount" });
    // The data lane has no such per-payload cap.
    admit(governor, data("t1", "p1", "x".repeat(100)));
  });

  it("never overshoots a count, byte, tenant or principal limit of either lane with many async callers racing", async () => {
    const limits = {
      data: { commands: 40, bytes: 200_000, tenant: 14, principal: 4 },
      control: { commands: 6, bytes: 30_000, tenant: 3, principal: 2 },
    } as const;
    const governor = new CommandAdmissionGovernor({
      MaxCommands: limits.data.commands,
      MaxRetainedBytes: limits.data.bytes,
      MaxCommandsPerTenant: limits.data.tenant,
      MaxCommandsPerPrincipal: limits.data.principal,
      ControlMaxCommands: limits.control.commands,
      ControlMaxRetainedBytes: limits.control.bytes,
      ControlMaxCommandsPerTenant: limits.control.tenant,
      ControlMaxCommandsPerPrincipal: limits.control.principal,
    });
    // Mostly small commands, so the count binds, and now and then a large one, so the bytes bind.
    const payloads = [
      "",
      "{}",
      "é".repeat(40),
      "",
      "😀".repeat(2000),
      "x".repeat(300),
      "",
      "\ud800".repeat(9),
    ];
    const refusals = { data: new Set<string>(), control: new Set<string>() };
    const peak = { data: { commands: 0, bytes: 0 }, control: { commands: 0, bytes: 0 } };
    // Collected rather than asserted one by one: thousands of expect calls would dominate the run.
    const overshoots: string[] = [];
    const check = () => {
      for (const lane of ["data", "control"] as const) {
        const usage = governor.usage(lane);
        if (usage.commands > limits[lane].commands) overshoots.push(`${lane} commands ${usage.commands}`);
        if (usage.retainedBytes > limits[lane].bytes) overshoots.push(`${lane} bytes ${usage.retainedBytes}`);
        if (usage.queued + usage.active !== usage.commands) overshoots.push(`${lane} queued + active`);
        peak[lane].commands = Math.max(peak[lane].commands, usage.commands);
        peak[lane].bytes = Math.max(peak[lane].bytes, usage.retainedBytes);
      }
      for (const scope of governor.status().verifiedScopes) {
        if (scope.tenantCommands > limits[scope.lane].tenant)
          overshoots.push(`${scope.lane} tenant ${scope.tenantId} ${scope.tenantCommands}`);
        if (scope.principalCommands > limits[scope.lane].principal)
          overshoots.push(`${scope.lane} principal ${scope.principalId} ${scope.principalCommands}`);
      }
    };
    const caller = async (n: number) => {
      const lane = n % 4 === 0 ? "control" : "data";
      // Over a third of the data callers belong to one tenant, so its cap binds before the lane is full;
      // control callers share two tenants whose caps add up to the lane's count.
      const tenantId = lane === "control" ? `t${(n >> 2) % 2}` : n % 3 === 0 ? "t0" : `t${n % 7}`;
      const principalId = lane === "control" ? `p${(n >> 3) % 3}` : `p${n % 5}`;
      for (let i = 0; i < 30; i++) {
        for (let t = (n * 7 + i) % 3; t > 0; t--) await tick();
        const payload = payloads[(n + 3 * i) % payloads.length] ?? "";
        const result = governor.tryAdmit({ lane, tenantId, principalId, payload: payloadSize(payload) });
        check();
        if (result instanceof AdmissionRefusal) {
          refusals[lane].add(result.reason);
          // A refusal is only ever given at the limit it names.
          const usage = governor.usage(lane);
          const scopes = governor.status().verifiedScopes.filter((s) => s.lane === lane);
          const tenant = scopes.find((s) => s.tenantId === tenantId);
          const principal = scopes.find((s) => s.tenantId === tenantId && s.principalId === principalId);
          if (result.reason === "CommandCount") expect(usage.commands).toBe(limits[lane].commands);
          if (result.reason === "CommandBytes") {
            expect(result.requested).toBe(retained(payload));
            expect(usage.retainedBytes + result.requested).toBeGreaterThan(limits[lane].bytes);
          }
          if (result.reason === "TenantCommands") expect(tenant?.tenantCommands).toBe(limits[lane].tenant);
          if (result.reason === "PrincipalCommands")
            expect(principal?.principalCommands).toBe(limits[lane].principal);
          continue;
        }
        for (let t = (n + i) % 4; t >= 0; t--) await tick();
        result.release();
        check();
      }
    };
    await Promise.all(Array.from({ length: 200 }, (_, n) => caller(n)));
    expect(overshoots).toEqual([]);
    const every = ["CommandBytes", "CommandCount", "PrincipalCommands", "TenantCommands"];
    expect([...refusals.data].sort()).toEqual(every);
    expect([...refusals.control].sort()).toEqual(every);
    // Each lane was driven to its count limit and close to its byte limit.
    expect(peak.data.commands).toBe(limits.data.commands);
    expect(peak.control.commands).toBe(limits.control.commands);
    expect(peak.data.bytes).toBeGreaterThan(limits.data.bytes - retained("😀".repeat(2000)));
    expect(peak.control.bytes).toBeGreaterThan(limits.control.bytes - retained("😀".repeat(2000)));
    for (const lane of ["data", "control"] as const)
      expect(governor.usage(lane)).toEqual({ commands: 0, retainedBytes: 0, queued: 0, active: 0 });
    expect(governor.status().verifiedScopes).toEqual([]);
  });

  it("isolates principals and tenants: a principal at its cap blocks neither its tenant's others nor other tenants", () => {
    const governor = new CommandAdmissionGovernor({ MaxCommandsPerTenant: 5, MaxCommandsPerPrincipal: 3 });
    for (let i = 0; i < 3; i++) admit(governor, data("t1", "p1"));
    expect(refusal(governor, data("t1", "p1")).reason).toBe("PrincipalCommands");
    admit(governor, data("t1", "p2"));
    admit(governor, data("t2", "p1"));
    admit(governor, data("t1", "p2"));
    // Tenant t1 is now at 5: all its principals are refused, other tenants are not.
    expect(refusal(governor, data("t1", "p3")).reason).toBe("TenantCommands");
    admit(governor, data("t2", "p3"));
    expect(governor.status().verifiedScopes).toEqual([
      { lane: "data", tenantId: "t1", principalId: "p1", tenantCommands: 5, principalCommands: 3 },
      { lane: "data", tenantId: "t1", principalId: "p2", tenantCommands: 5, principalCommands: 2 },
      { lane: "data", tenantId: "t2", principalId: "p1", tenantCommands: 2, principalCommands: 1 },
      { lane: "data", tenantId: "t2", principalId: "p3", tenantCommands: 2, principalCommands: 1 },
    ]);
  });

  it("makes the API keys of one principal share its budget", () => {
    // The voter resolves each key through the verified catalog; only the principal reaches admission.
    const catalog = new Map([
      ["key-a", { tenantId: "acme", principalId: "svc" }],
      ["key-b", { tenantId: "acme", principalId: "svc" }],
      ["key-c", { tenantId: "acme", principalId: "other" }],
    ]);
    const governor = new CommandAdmissionGovernor();
    const submitWith = (key: string) => {
      const principal = catalog.get(key)!;
      return governor.tryAdmit({ lane: "data", ...principal, payload: payloadSize("{}") });
    };
    for (let i = 0; i < 32; i++) {
      expect(submitWith("key-a")).toBeInstanceOf(CommandReservation);
      expect(submitWith("key-b")).toBeInstanceOf(CommandReservation);
    }
    expect(submitWith("key-a")).toMatchObject({ reason: "PrincipalCommands", limitValue: 64, inUse: 64 });
    expect(submitWith("key-b")).toMatchObject({ reason: "PrincipalCommands" });
    expect(submitWith("key-c")).toBeInstanceOf(CommandReservation);
  });

  it("keeps the control reserve independent of a full data lane", () => {
    const governor = new CommandAdmissionGovernor();
    const held: CommandReservation[] = [];
    // 128 commands of exactly 1 MiB retained each fill the 128 MiB data lane.
    const payload = "x".repeat((1024 * 1024 - 4096) / 4);
    for (let i = 0; ; i++) {
      const result = governor.tryAdmit(data(`t${i % 10}`, `p${i}`, payload));
      if (result instanceof AdmissionRefusal) {
        expect(result.reason).toBe("CommandBytes");
        break;
      }
      held.push(result);
    }
    expect(held).toHaveLength(128);
    expect(refusal(governor, data("t0", "fresh", "{}")).reason).toBe("CommandBytes");
    // The same tenants and principals still get the full control reserve.
    const controls = Array.from({ length: 16 }, (_, i) => admit(governor, control(`t${i % 2}`, `p${i % 2}`)));
    expect(governor.usage("control").commands).toBe(16);
    expect(refusal(governor, control("t9", "p9")).reason).toBe("CommandCount");
    for (const r of controls) r.release();
    for (const r of held) r.release();
    expect(governor.status().verifiedScopes).toEqual([]);
  });

  it("bounds the control lane's retained bytes by ControlMaxRetainedBytes, apart from the data lane's", () => {
    const payload = "x".repeat(1000);
    const bytes = retained(payload);
    const governor = new CommandAdmissionGovernor({
      ControlMaxRetainedBytes: 2 * bytes,
      MaxRetainedBytes: bytes,
    });
    admit(governor, control("t1", "p1", payload));
    admit(governor, control("t2", "p2", payload));
    expect(refusal(governor, control("t3", "p3", ""))).toMatchObject({
      reason: "CommandBytes",
      lane: "control",
      limit: "ControlMaxRetainedBytes",
      limitValue: 2 * bytes,
      requested: retained(""),
      inUse: 2 * bytes,
    });
    admit(governor, data("t3", "p3", payload));
    expect(refusal(governor, data("t3", "p3", ""))).toMatchObject({ limit: "MaxRetainedBytes" });
  });

  it("applies the control lane's own per-tenant and per-principal caps", () => {
    const governor = new CommandAdmissionGovernor({
      ControlMaxCommandsPerTenant: 3,
      ControlMaxCommandsPerPrincipal: 2,
    });
    admit(governor, control("t1", "p1"));
    admit(governor, control("t1", "p1"));
    expect(refusal(governor, control("t1", "p1"))).toMatchObject({
      reason: "PrincipalCommands",
      limit: "ControlMaxCommandsPerPrincipal",
    });
    admit(governor, control("t1", "p2"));
    expect(refusal(governor, control("t1", "p3"))).toMatchObject({
      reason: "TenantCommands",
      limit: "ControlMaxCommandsPerTenant",
    });
    // Data counts are separate.
    admit(governor, data("t1", "p1"));
  });

  it("counts queued and active commands apart", () => {
    const governor = new CommandAdmissionGovernor();
    const a = admit(governor, data("t1", "p1"));
    admit(governor, data("t1", "p1"));
    a.markActive();
    expect(governor.usage("data")).toMatchObject({ commands: 2, queued: 1, active: 1 });
    a.release();
    expect(governor.usage("data")).toMatchObject({ commands: 1, queued: 1, active: 0 });
  });

  it("removes scope counters when their last reservation is released", () => {
    const governor = new CommandAdmissionGovernor();
    const a = admit(governor, data("t1", "p1"));
    const b = admit(governor, data("t1", "p2"));
    const c = admit(governor, control("t1", "p1"));
    a.release();
    expect(governor.status().verifiedScopes).toEqual([
      { lane: "data", tenantId: "t1", principalId: "p2", tenantCommands: 1, principalCommands: 1 },
      { lane: "control", tenantId: "t1", principalId: "p1", tenantCommands: 1, principalCommands: 1 },
    ]);
    b.release();
    c.release();
    expect(governor.status().verifiedScopes).toEqual([]);
    expect(governor.usage("data")).toEqual({ commands: 0, retainedBytes: 0, queued: 0, active: 0 });
  });

  it("treats a second release as a bug: it throws and leaves the counters exact", () => {
    const governor = new CommandAdmissionGovernor();
    const a = admit(governor, data("t1", "p1"));
    const b = admit(governor, data("t1", "p1"));
    a.release();
    expect(() => a.release()).toThrow(ReservationStateError);
    expect(() => a.markActive()).toThrow(ReservationStateError);
    expect(governor.usage("data")).toMatchObject({ commands: 1, queued: 1 });
    expect(governor.status().verifiedScopes).toMatchObject([{ tenantCommands: 1, principalCommands: 1 }]);
    b.markActive();
    expect(() => b.markActive()).toThrow(ReservationStateError);
    b.release();
    expect(() => b.release()).toThrow(/released twice/);
    expect(governor.usage("data")).toEqual({ commands: 0, retainedBytes: 0, queued: 0, active: 0 });
  });

  it("changes nothing when it refuses, whichever limit refuses", () => {
    const refusing: [string, CommandAdmissionGovernor, CommandAdmissionRequest][] = [
      [
        "ControlPayloadTooLarge",
        new CommandAdmissionGovernor({ ControlMaxPayloadBytes: 4 }),
        control("t1", "p1", "12345"),
      ],
      ["CommandCount", new CommandAdmissionGovernor({ MaxCommands: 1 }), data("t2", "p2")],
      [
        "CommandBytes",
        new CommandAdmissionGovernor({ MaxRetainedBytes: 5000 }),
        data("t2", "p2", "x".repeat(300)),
      ],
      ["TenantCommands", new CommandAdmissionGovernor({ MaxCommandsPerTenant: 1 }), data("t1", "p2")],
      ["PrincipalCommands", new CommandAdmissionGovernor({ MaxCommandsPerPrincipal: 1 }), data("t1", "p1")],
    ];
    for (const [reason, governor, request] of refusing) {
      admit(governor, request.lane === "control" ? control("t1", "p1") : data("t1", "p1"));
      const before = governor.status();
      expect(refusal(governor, request).reason).toBe(reason);
      expect(governor.status()).toEqual(before);
    }
  });
});
