import { InvalidArgumentError, ResourceExhaustedError } from "@keyload/contract";
import { describe, expect, it } from "vitest";
import { ReservationStateError } from "./admission-errors.js";
import { AdmissionRefusal } from "./admission-refusal.js";
import { BodyGuard } from "./body-guard.js";
import { HttpAdmissionGovernor, type HttpAdmissionRequest } from "./http-admission-governor.js";
import { HttpReservation } from "./http-reservation.js";

const MiB = 1024 * 1024;

function reserve(governor: HttpAdmissionGovernor, request: HttpAdmissionRequest): HttpReservation {
  const result = governor.reserve(request);
  if (!(result instanceof HttpReservation)) throw new Error(`expected a reservation, got ${result.message}`);
  return result;
}

function refusal(governor: HttpAdmissionGovernor, request: HttpAdmissionRequest): AdmissionRefusal {
  const result = governor.reserve(request);
  if (!(result instanceof AdmissionRefusal)) throw new Error("expected a refusal");
  return result;
}

/** How the HTTP layer classifies the four heavy read routes (contract section 4). */
const heavyRoutes = {
  "POST /v1/catalog/bulk-get": "heavy",
  "POST /v1/query": "heavy",
  "POST /v1/search": "heavy",
  "POST /v1/graph/traverse": "heavy",
} as const;
const routes = Object.keys(heavyRoutes) as (keyof typeof heavyRoutes)[];

describe("HttpAdmissionGovernor", () => {
  it("models working space + 4 x admitted body + 4096 per kind", () => {
    const governor = new HttpAdmissionGovernor();
    expect(reserve(governor, { kind: "heavy", declaredLength: 100 }).modeledBytes).toBe(
      64 * MiB + 400 + 4096,
    );
    expect(reserve(governor, { kind: "data", declaredLength: 0 }).modeledBytes).toBe(8 * MiB + 4096);
    expect(reserve(governor, { kind: "control", declaredLength: 10 }).modeledBytes).toBe(40 + 4096);
    // Unknown (chunked) lengths reserve the route's whole body cap.
    const chunked = reserve(governor, { kind: "data" });
    expect(chunked.admittedBodyBytes).toBe(8 * MiB);
    expect(chunked.modeledBytes).toBe(8 * MiB + 4 * 8 * MiB + 4096);
    expect(reserve(governor, { kind: "control" }).modeledBytes).toBe(4 * 64 * 1024 + 4096);
    expect(reserve(governor, { kind: "data", bodyCap: 1000 }).admittedBodyBytes).toBe(1000);
    // A route cap cannot exceed the configured pool cap.
    expect(reserve(governor, { kind: "control", bodyCap: 10 * MiB }).admittedBodyBytes).toBe(64 * 1024);
    expect(governor.usage("data")).toEqual({
      requests: 4,
      modeledBytes: 64 * MiB + 400 + 4096 + 8 * MiB + 4096 + 40 * MiB + 4096 + 8 * MiB + 4000 + 4096,
    });
    expect(governor.usage("control").requests).toBe(3);
  });

  it("takes working space, body caps and the control pool's bytes from its configuration", () => {
    const governor = new HttpAdmissionGovernor({
      HeavyReadBytes: 1000,
      DataRequestBytes: 100,
      MaxDataBodyBytes: 50,
      MaxControlBodyBytes: 20,
      ControlMaxModeledBytes: 2 * (4 * 20 + 4096),
    });
    expect(reserve(governor, { kind: "heavy", declaredLength: 10 }).modeledBytes).toBe(1000 + 40 + 4096);
    expect(reserve(governor, { kind: "data", declaredLength: 10 }).modeledBytes).toBe(100 + 40 + 4096);
    expect(reserve(governor, { kind: "data" }).modeledBytes).toBe(100 + 4 * 50 + 4096);
    expect(refusal(governor, { kind: "data", declaredLength: 51 })).toMatchObject({
      reason: "BodyTooLarge",
      limit: "MaxDataBodyBytes",
      limitValue: 50,
    });
    reserve(governor, { kind: "control" });
    reserve(governor, { kind: "control" });
    expect(refusal(governor, { kind: "control", declaredLength: 0 })).toMatchObject({
      reason: "HttpBytes",
      lane: "control",
      limit: "ControlMaxModeledBytes",
      requested: 4096,
      inUse: 2 * (4 * 20 + 4096),
    });
  });

  it("shares the data pool's bytes across query, search, graph traversal and bulk reads", () => {
    const governor = new HttpAdmissionGovernor();
    const perRead = 64 * MiB + 4096;
    const held = Array.from({ length: 15 }, (_, i) =>
      reserve(governor, { kind: heavyRoutes[routes[i % 4]!], declaredLength: 0 }),
    );
    for (const route of routes) {
      expect(refusal(governor, { kind: heavyRoutes[route], declaredLength: 0 })).toMatchObject({
        reason: "HttpBytes",
        governor: "http",
        lane: "data",
        limit: "MaxModeledBytes",
        limitValue: 1024 * MiB,
        requested: perRead,
        inUse: 15 * perRead,
      });
    }
    // What is left still takes a lighter data request.
    const light = reserve(governor, { kind: "data", declaredLength: 0 });
    held[0]!.dispose();
    reserve(governor, { kind: "heavy", declaredLength: 0 });
    light.dispose();
    expect(governor.usage("data")).toEqual({ requests: 15, modeledBytes: 15 * perRead });
  });

  it("bounds the slots of a pool", () => {
    const governor = new HttpAdmissionGovernor({ MaxRequests: 2, ControlMaxRequests: 1 });
    reserve(governor, { kind: "data", declaredLength: 0 });
    reserve(governor, { kind: "heavy", declaredLength: 0 });
    expect(refusal(governor, { kind: "data", declaredLength: 0 })).toMatchObject({
      reason: "HttpRequests",
      limit: "MaxRequests",
      limitValue: 2,
      inUse: 2,
    });
    reserve(governor, { kind: "control", declaredLength: 0 });
    expect(refusal(governor, { kind: "control", declaredLength: 0 })).toMatchObject({
      reason: "HttpRequests",
      lane: "control",
      limit: "ControlMaxRequests",
    });
    expect(refusal(governor, { kind: "control" }).toError().status).toBe(429);
  });

  it("keeps the pools independent: a full data pool leaves the control pool whole, and back", () => {
    const governor = new HttpAdmissionGovernor();
    const data = Array.from({ length: 32 }, () => reserve(governor, { kind: "data", declaredLength: 0 }));
    expect(refusal(governor, { kind: "heavy", declaredLength: 0 }).reason).toBe("HttpRequests");
    const control = Array.from({ length: 16 }, () => reserve(governor, { kind: "control" }));
    expect(refusal(governor, { kind: "control" }).reason).toBe("HttpRequests");
    for (const r of data) r.dispose();
    reserve(governor, { kind: "data", declaredLength: 0 });
    expect(governor.usage("control").requests).toBe(16);
    for (const r of control) r.dispose();
    expect(governor.usage("control")).toEqual({ requests: 0, modeledBytes: 0 });
  });

  it("counts a request under the ingress scope until its key is verified, then under its principal", () => {
    const governor = new HttpAdmissionGovernor({ MaxRequestsPerPrincipal: 2, MaxRequestsPerTenant: 3 });
    // Before authentication, any number of requests of one (future) principal only spend slots.
    const unverified = Array.from({ length: 5 }, () =>
      reserve(governor, { kind: "data", declaredLength: 0 }),
    );
    expect(governor.ingress("data")).toBe(5);
    expect(governor.status().verifiedScopes).toEqual([]);
    expect(unverified[0]!.bind("t1", "p1")).toBeUndefined();
    expect(unverified[1]!.bind("t1", "p1")).toBeUndefined();
    expect([unverified[0]!.tenantId, unverified[0]!.principalId, unverified[0]!.bound]).toEqual([
      "t1",
      "p1",
      true,
    ]);
    expect(governor.ingress("data")).toBe(3);
    expect(governor.status().verifiedScopes).toEqual([
      { pool: "data", tenantId: "t1", principalId: "p1", tenantRequests: 2, principalRequests: 2 },
    ]);

    // Over the principal's cap the bind is refused and the whole reservation released.
    const before = governor.usage("data");
    const refused = unverified[2]!.bind("t1", "p1");
    expect(refused).toMatchObject({
      reason: "PrincipalRequests",
      lane: "data",
      limit: "MaxRequestsPerPrincipal",
      inUse: 2,
    });
    expect(unverified[2]!.disposed).toBe(true);
    expect(governor.usage("data")).toEqual({
      requests: before.requests - 1,
      modeledBytes: before.modeledBytes - unverified[2]!.modeledBytes,
    });
    expect(governor.ingress("data")).toBe(2);

    expect(unverified[3]!.bind("t1", "p2")).toBeUndefined();
    expect(unverified[4]!.bind("t1", "p3")).toMatchObject({
      reason: "TenantRequests",
      limit: "MaxRequestsPerTenant",
    });
    expect(governor.ingress("data")).toBe(0);
    expect(governor.usage("data").requests).toBe(3);
    expect(() => unverified[0]!.bind("t1", "p1")).toThrow(ReservationStateError);
  });

  it("binds the control pool's own per-tenant and per-principal caps", () => {
    const governor = new HttpAdmissionGovernor({ ControlMaxRequestsPerPrincipal: 1 });
    expect(reserve(governor, { kind: "control" }).bind("t1", "p1")).toBeUndefined();
    expect(reserve(governor, { kind: "control" }).bind("t1", "p1")).toMatchObject({
      reason: "PrincipalRequests",
      lane: "control",
      limit: "ControlMaxRequestsPerPrincipal",
    });
    // The data pool's count of the same principal is separate.
    expect(reserve(governor, { kind: "data", declaredLength: 0 }).bind("t1", "p1")).toBeUndefined();
  });

  it("releases exactly once on disposal, whichever paths dispose", () => {
    const governor = new HttpAdmissionGovernor();
    const aborted = reserve(governor, { kind: "data", declaredLength: 10 });
    const bound = reserve(governor, { kind: "heavy", declaredLength: 10 });
    bound.bind("t1", "p1");
    const kept = reserve(governor, { kind: "data", declaredLength: 0 });
    kept.bind("t1", "p1");
    // The client went away during authentication: abort handler and failed response both dispose.
    aborted.dispose();
    aborted.dispose();
    expect(aborted.bind("t1", "p1")).toBeUndefined();
    expect(aborted.bound).toBe(false);
    bound.dispose();
    bound.dispose();
    expect(governor.status()).toMatchObject({
      data: { requests: 1, modeledBytes: kept.modeledBytes },
      ingress: { data: 0, control: 0 },
      verifiedScopes: [
        { pool: "data", tenantId: "t1", principalId: "p1", tenantRequests: 1, principalRequests: 1 },
      ],
    });
    kept.dispose();
    expect(governor.status()).toMatchObject({
      data: { requests: 0, modeledBytes: 0 },
      ingress: { data: 0, control: 0 },
      verifiedScopes: [],
    });
  });

  it("refuses a declared length over the route cap with BodyTooLarge before anything is counted", () => {
    const governor = new HttpAdmissionGovernor();
    const tooLarge = refusal(governor, { kind: "data", declaredLength: 8 * MiB + 1 });
    expect(tooLarge).toMatchObject({
      reason: "BodyTooLarge",
      lane: "data",
      limit: "MaxDataBodyBytes",
      limitValue: 8 * MiB,
      requested: 8 * MiB + 1,
    });
    const error = tooLarge.toError("cmd-1");
    expect(error).toBeInstanceOf(ResourceExhaustedError);
    expect([error.status, error.retryAfterSeconds, error.commandId]).toEqual([413, undefined, "cmd-1"]);
    expect(refusal(governor, { kind: "control", declaredLength: 64 * 1024 + 1 })).toMatchObject({
      reason: "BodyTooLarge",
      limit: "MaxControlBodyBytes",
    });
    expect(refusal(governor, { kind: "data", declaredLength: 101, bodyCap: 100 })).toMatchObject({
      reason: "BodyTooLarge",
      limitValue: 100,
    });
    expect(governor.usage("data")).toEqual({ requests: 0, modeledBytes: 0 });
    // Exactly at the cap is fine, even with every slot taken the size is reported first.
    reserve(governor, { kind: "data", declaredLength: 8 * MiB }).dispose();
    const full = new HttpAdmissionGovernor({ MaxRequests: 1 });
    reserve(full, { kind: "data", declaredLength: 0 });
    expect(refusal(full, { kind: "data", declaredLength: 9 * MiB }).reason).toBe("BodyTooLarge");
  });

  it("guards a chunked body at the admitted size", async () => {
    const governor = new HttpAdmissionGovernor({ MaxControlBodyBytes: 10 });
    const reservation = reserve(governor, { kind: "control" });
    const guard = new BodyGuard(reservation.pool, reservation.admittedBodyBytes);
    async function* chunks() {
      yield new Uint8Array(4);
      yield new Uint8Array(6);
      yield new Uint8Array(1);
    }
    const received: number[] = [];
    const read = async () => {
      for await (const chunk of guard.guard(chunks())) received.push(chunk.byteLength);
    };
    await expect(read()).rejects.toThrow(ResourceExhaustedError);
    expect(received).toEqual([4, 6]);
    await expect(read()).rejects.toMatchObject({
      reason: "BodyTooLarge",
      status: 413,
      details: { governor: "http", pool: "control", limit: "MaxControlBodyBytes", limitValue: 10 },
    });
    reservation.dispose();
    expect(governor.usage("control").requests).toBe(0);
  });

  it("advises a longer Retry-After while it refuses more than a tenth of what it admits", () => {
    let now = 0;
    const governor = new HttpAdmissionGovernor({ MaxRequests: 2 }, () => now);
    const held = [reserve(governor, { kind: "data" }), reserve(governor, { kind: "data" })];
    const retryAfter = (): number | undefined =>
      refusal(governor, { kind: "data" }).toError().retryAfterSeconds;
    expect(retryAfter()).toBe(1);
    now += 1_000;
    expect(retryAfter()).toBe(2);
    now += 1_000;
    expect(retryAfter()).toBe(4);
    // A refusal of a body over the cap is not for want of room: it advises no wait.
    const tooLarge = refusal(governor, { kind: "data", declaredLength: 9 * MiB });
    expect(tooLarge.reason).toBe("BodyTooLarge");
    expect(tooLarge.toError().retryAfterSeconds).toBeUndefined();
    // The control pool keeps its own advice.
    for (let i = 0; i < 16; i++) reserve(governor, { kind: "control" });
    expect(refusal(governor, { kind: "control" }).toError().retryAfterSeconds).toBe(1);
    // Quiet windows bring it back down.
    for (const r of held) r.dispose();
    now += 10_000;
    reserve(governor, { kind: "data" });
    reserve(governor, { kind: "data" });
    expect(retryAfter()).toBe(1);
  });

  it("refuses a malformed declared length as an invalid argument", () => {
    const governor = new HttpAdmissionGovernor();
    expect(() => governor.reserve({ kind: "data", declaredLength: -1 })).toThrow(InvalidArgumentError);
    expect(() => governor.reserve({ kind: "data", declaredLength: 1.5 })).toThrow(InvalidArgumentError);
  });

  it("never overshoots a slot, byte, tenant or principal limit of either pool with many async requests racing through reserve, bind and dispose", async () => {
    const limits = {
      data: { requests: 12, bytes: 300 * MiB, tenant: 6, principal: 3 },
      control: { requests: 6, bytes: MiB, tenant: 3, principal: 2 },
    } as const;
    const governor = new HttpAdmissionGovernor({
      MaxRequests: limits.data.requests,
      MaxModeledBytes: limits.data.bytes,
      MaxRequestsPerTenant: limits.data.tenant,
      MaxRequestsPerPrincipal: limits.data.principal,
      ControlMaxRequests: limits.control.requests,
      ControlMaxModeledBytes: limits.control.bytes,
      ControlMaxRequestsPerTenant: limits.control.tenant,
      ControlMaxRequestsPerPrincipal: limits.control.principal,
    });
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    const refusals = { data: new Set<string>(), control: new Set<string>() };
    const peak = { data: { requests: 0, bytes: 0 }, control: { requests: 0, bytes: 0 } };
    let served = 0;
    // Collected rather than asserted one by one: thousands of expect calls would dominate the run.
    const overshoots: string[] = [];
    const check = () => {
      const status = governor.status();
      for (const pool of ["data", "control"] as const) {
        const usage = status[pool];
        if (usage.requests > limits[pool].requests) overshoots.push(`${pool} requests ${usage.requests}`);
        if (usage.modeledBytes > limits[pool].bytes) overshoots.push(`${pool} bytes ${usage.modeledBytes}`);
        const bound = status.verifiedScopes
          .filter((s) => s.pool === pool)
          .reduce((sum, s) => sum + s.principalRequests, 0);
        if (bound + status.ingress[pool] !== usage.requests) overshoots.push(`${pool} ingress + bound`);
        peak[pool].requests = Math.max(peak[pool].requests, usage.requests);
        peak[pool].bytes = Math.max(peak[pool].bytes, usage.modeledBytes);
      }
      for (const scope of status.verifiedScopes) {
        if (scope.tenantRequests > limits[scope.pool].tenant)
          overshoots.push(`${scope.pool} tenant ${scope.tenantId} ${scope.tenantRequests}`);
        if (scope.principalRequests > limits[scope.pool].principal)
          overshoots.push(`${scope.pool} principal ${scope.principalId} ${scope.principalRequests}`);
      }
    };
    const client = async (n: number) => {
      const pool = n % 4 === 0 ? "control" : "data";
      // Two tenants share each pool, so both a principal's cap and a tenant's bind before the slots run out.
      const tenantId = pool === "control" ? `t${(n >> 2) % 2}` : `t${n % 2}`;
      const principalId = pool === "control" ? `p${(n >> 3) % 3}` : `p${(n >> 1) % 2}`;
      for (let i = 0; i < 15; i++) {
        await tick();
        const kind = pool === "control" ? "control" : (n + i) % 3 === 0 ? "heavy" : "data";
        // Every fourth request is chunked: it reserves the pool's whole body cap.
        const declaredLength = (n + i) % 4 === 0 ? undefined : (n * 31 + i) % 1000;
        const result = governor.reserve({ kind, declaredLength });
        check();
        if (result instanceof AdmissionRefusal) {
          refusals[pool].add(result.reason);
          continue;
        }
        await tick();
        if ((n + i) % 7 === 0) {
          result.dispose(); // the client went away before authentication finished
          check();
          continue;
        }
        const bindRefusal = result.bind(tenantId, principalId);
        check();
        if (bindRefusal !== undefined) {
          refusals[pool].add(bindRefusal.reason);
          expect(result.disposed).toBe(true);
          continue;
        }
        for (let t = n % 3; t >= 0; t--) await tick();
        served++;
        result.dispose();
        result.dispose();
        check();
      }
    };
    await Promise.all(Array.from({ length: 80 }, (_, n) => client(n)));
    expect(overshoots).toEqual([]);
    expect(served).toBeGreaterThan(50);
    const every = ["HttpBytes", "HttpRequests", "PrincipalRequests", "TenantRequests"];
    expect([...refusals.data].sort()).toEqual(every);
    expect([...refusals.control].sort()).toEqual(every);
    expect(peak.data.requests).toBe(limits.data.requests);
    expect(peak.control.requests).toBe(limits.control.requests);
    expect(peak.data.bytes).toBeGreaterThan(limits.data.bytes - (64 + 32) * MiB);
    expect(peak.control.bytes).toBeGreaterThan(limits.control.bytes - 4 * 64 * 1024 - 4096);
    expect(governor.status()).toMatchObject({
      data: { requests: 0, modeledBytes: 0 },
      control: { requests: 0, modeledBytes: 0 },
      ingress: { data: 0, control: 0 },
      verifiedScopes: [],
    });
  });
});
