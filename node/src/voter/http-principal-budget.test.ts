import type { Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import { open } from "../http/test-fixtures/raw-http.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

let cluster: VoterCluster | undefined;
const held: Socket[] = [];
afterEach(async () => {
  for (const socket of held.splice(0)) socket.destroy();
  await cluster?.dispose();
  cluster = undefined;
});

interface ScopeStatus {
  readonly pool: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly principalRequests: number;
}

/** The principal's count in the voter's HTTP admission status, 0 when it holds no slot. */
async function principalRequests(url: string, principalId: string): Promise<number> {
  const status = await call(url, "GET", "/v1/admin/admission");
  const http = status.body.httpAdmission as { verifiedScopes: ScopeStatus[] };
  const scope = http.verifiedScopes.find((s) => s.pool === "data" && s.principalId === principalId);
  return scope?.principalRequests ?? 0;
}

async function pollUntil(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe("HTTP admission on a voter", () => {
  it("counts every API key of one principal against that principal's budget, and no other's", async () => {
    cluster = await VoterCluster.start({ env: { KeyLoad__HttpAdmission__MaxRequestsPerPrincipal: "2" } });
    const url = cluster.voter(await cluster.waitForLeader()).httpUrl;
    let commands = 0;
    const admin = (path: string, body?: unknown) =>
      call(url, "POST", path, { commandId: `admin-${++commands}`, ...(body === undefined ? {} : { body }) });
    for (const principalId of ["p1", "p2"]) {
      const created = await admin("/v1/admin/principals", { principalId, tenantId: "t1", roles: ["writer"] });
      expect(created.status).toBe(201);
    }
    const keys: string[] = [];
    for (const principalId of ["p1", "p1", "p2"]) {
      const created = await admin(`/v1/admin/principals/${principalId}/keys`);
      expect(created.status).toBe(201);
      keys.push(String(created.body.apiKey));
    }
    const [keyA, keyB, otherPrincipalKey] = keys as [string, string, string];

    // Key A fills p1's budget with writes whose bodies never finish arriving: each holds its slot.
    const { port } = new URL(url);
    for (let i = 0; i < 2; i++) {
      const socket = await open(Number(port));
      held.push(socket);
      socket.write(
        "PUT /v1/catalog/k HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
          `Authorization: Bearer ${keyA}\r\nKeyLoad-Command-Id: held-${i}\r\nContent-Length: 100\r\n\r\n{"value":`,
      );
    }
    await pollUntil(async () => (await principalRequests(url, "p1")) === 2, "key A's requests to be held");

    const refused = await call(url, "GET", "/v1/catalog/k", { key: keyB });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.body).toEqual({
      error: {
        code: "ResourceExhausted",
        reason: "PrincipalRequests",
        message: expect.any(String),
        details: {
          governor: "http",
          pool: "data",
          limit: "MaxRequestsPerPrincipal",
          limitValue: 2,
          requested: 1,
          inUse: 2,
        },
      },
    });

    // Another principal of the same tenant keeps its own budget.
    const other = await call(url, "PUT", "/v1/catalog/k", {
      key: otherPrincipalKey,
      commandId: "other-1",
      body: { value: "from p2" },
    });
    expect(other).toMatchObject({ status: 200, body: { key: "k", version: 1 } });

    // Once key A's requests are gone, key B is admitted from the same budget.
    for (const socket of held.splice(0)) socket.destroy();
    await pollUntil(async () => (await principalRequests(url, "p1")) === 0, "p1's slots to be released");
    const admitted = await call(url, "GET", "/v1/catalog/k", { key: keyB });
    expect(admitted).toMatchObject({ status: 200, body: { key: "k", value: "from p2", version: 1 } });
  });
});
