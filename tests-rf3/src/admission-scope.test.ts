import {
  type AdmissionStatus,
  type KeyLoadClient,
  NotFoundError,
  PermissionDeniedError,
  UnknownWriteOutcomeError,
  type WriteOptions,
} from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { closeAll, holdDataSlot } from "./test-fixtures/held-data-slots.js";
import { waitForDataCommands, waitForMetric } from "./test-fixtures/metric-wait.js";
import { PausedLeader } from "./test-fixtures/paused-leader.js";
import type { RawRequest } from "./test-fixtures/raw-request.js";
import { ensureFollower } from "./test-fixtures/voter-roles.js";
import { waitUntil } from "./test-fixtures/wait-until.js";

const startCluster = clusterPerTest();

/** What a body may claim about its caller; the voter must take none of it. */
const CLAIMS = { tenantId: "system", principalId: "admin", roles: ["admin"] } as const;

/** A catalog put whose body carries `CLAIMS` beside its value, sent as it is. */
function putClaiming(client: KeyLoadClient, key: string, value: unknown, options: WriteOptions) {
  const body = new TextEncoder().encode(JSON.stringify({ ...CLAIMS, value }));
  return client.upload(
    "PUT",
    `/v1/catalog/${encodeURIComponent(key)}`,
    async function* () {
      yield body;
    },
    options,
  );
}

/** A write's result, resubmitted under its command ID should its first outcome be unknown. */
async function settled<T>(
  client: KeyLoadClient,
  commandId: string,
  submit: (options: WriteOptions) => Promise<T>,
  first: Promise<T>,
): Promise<T> {
  try {
    return await first;
  } catch (error) {
    if (!(error instanceof UnknownWriteOutcomeError)) throw error;
    return client.resolveOutcome(commandId, submit);
  }
}

type HttpScopes = AdmissionStatus["httpAdmission"]["verifiedScopes"];

describe("admission scope", () => {
  it("several API keys of one principal share its HTTP budget on the voter asked, which blocks no other principal or tenant; two principals reach their tenant's cap", async () => {
    const cluster = await startCluster({
      env: { KeyLoad__HttpAdmission__MaxRequestsPerTenant: "4" },
      voterEnv: { voter1: { KeyLoad__HttpAdmission__MaxRequestsPerPrincipal: "2" } },
    });
    const [voter1, voter2] = [cluster.voter("voter1").httpUrl, cluster.voter("voter2").httpUrl];
    const ops = await cluster.createTenant({ tenantId: "acme", principalId: "acme-ops", keys: 2 });
    const billing = await cluster.createTenant({ tenantId: "acme", principalId: "acme-billing" });
    const globex = await cluster.createTenant({ tenantId: "globex", principalId: "globex-ops" });
    const audit = await cluster.createTenant({ tenantId: "acme", principalId: "acme-audit" });
    const once = (apiKey: string) => cluster.client(apiKey, { maxAttempts: 1, adaptiveThrottle: false });
    const admin = once(cluster.adminKey);
    const [keyA1, keyA2] = ops.keys.map((k) => k.apiKey) as [string, string];

    const held: RawRequest[] = [];
    try {
      // Two requests of key A1 hold voter1's slots, bound to the principal before the body is read.
      held.push(holdDataSlot(voter1, keyA1, "held-1"), holdDataSlot(voter1, keyA1, "held-2"));
      // Both held and bound (out of the ingress scope), beside the status request itself.
      const status = await waitUntil("voter1 to hold both requests, bound", async (seen) => {
        const answer = await admin.admissionStatus({ endpoint: voter1 });
        seen(answer.httpAdmission);
        const { data, ingress } = answer.httpAdmission;
        return data.requests === 3 && ingress.data === 0 ? answer : undefined;
      });
      expect(status.httpAdmission.verifiedScopes).toEqual<HttpScopes>([
        { pool: "data", tenantId: "acme", principalId: "acme-ops", tenantRequests: 2, principalRequests: 2 },
        { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
      ]);

      // Key A2 is another key of the same principal: its budget on voter1 is spent.
      await expect(once(keyA2).get("acme/anything", { endpoint: voter1 })).rejects.toMatchObject({
        code: "ResourceExhausted",
        reason: "PrincipalRequests",
        governor: "http",
        pool: "data",
        status: 429,
      });
      // Another principal of the same tenant, and a principal of another tenant, are admitted.
      await expect(once(billing.apiKey).put("acme/billing", 1, { endpoint: voter1 })).resolves.toMatchObject({
        version: 1,
      });
      await expect(once(globex.apiKey).put("globex/ops", 1, { endpoint: voter1 })).resolves.toMatchObject({
        version: 1,
      });
      // The cap is voter1's own: voter2 keeps the default of eight per principal.
      await expect(once(keyA2).put("acme/ops", 1, { endpoint: voter2 })).resolves.toMatchObject({
        version: 1,
      });

      // Two held requests of the billing principal bring the tenant to voter1's cap of four: two
      // principals, each at its own cap of two.
      held.push(
        holdDataSlot(voter1, billing.apiKey, "held-3"),
        holdDataSlot(voter1, billing.apiKey, "held-4"),
      );
      const full = await waitUntil("voter1 to hold four requests of the tenant, bound", async (seen) => {
        const answer = await admin.admissionStatus({ endpoint: voter1 });
        seen(answer.httpAdmission);
        const { data, ingress } = answer.httpAdmission;
        return data.requests === 5 && ingress.data === 0 ? answer : undefined;
      });
      expect(full.httpAdmission.verifiedScopes).toEqual<HttpScopes>([
        {
          pool: "data",
          tenantId: "acme",
          principalId: "acme-billing",
          tenantRequests: 4,
          principalRequests: 2,
        },
        { pool: "data", tenantId: "acme", principalId: "acme-ops", tenantRequests: 4, principalRequests: 2 },
        { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
      ]);
      // A third principal of the tenant, with nothing of its own in use, is refused for the tenant.
      await expect(once(audit.apiKey).get("acme/anything", { endpoint: voter1 })).rejects.toMatchObject({
        code: "ResourceExhausted",
        reason: "TenantRequests",
        governor: "http",
        pool: "data",
        status: 429,
      });
      // Another tenant is admitted beside it, and the tenant's cap is voter1's alone.
      await expect(once(globex.apiKey).get("globex/ops", { endpoint: voter1 })).resolves.toMatchObject({
        value: 1,
      });
      await expect(once(audit.apiKey).get("acme/ops", { endpoint: voter2 })).resolves.toMatchObject({
        value: 1,
      });
      const limits = async (endpoint: string) =>
        (await admin.admissionStatus({ endpoint })).httpAdmission.limits;
      expect(await limits(voter1)).toMatchObject({ maxRequestsPerPrincipal: 2, maxRequestsPerTenant: 4 });
      expect(await limits(voter2)).toMatchObject({ maxRequestsPerPrincipal: 8, maxRequestsPerTenant: 4 });
    } finally {
      closeAll(held);
    }

    // Hung up, the held requests give the principal's budget back.
    await waitForMetric(admin, voter1, "keyload_http_admission_requests", { pool: "data" }, 0);
    await expect(once(keyA2).get("acme/ops", { endpoint: voter1 })).resolves.toMatchObject({ value: 1 });
  });

  it("several API keys of one principal share its command budget while replication is held, two principals reach their tenant's cap; the scope charged and the authority are the verified ones, whatever the body claims", async () => {
    const cluster = await startCluster({
      env: {
        // Long enough that the followers do not elect before the held writes reach the paused leader.
        KeyLoad__Raft__ElectionTimeoutMs: "2000",
        // The forwards wait on the paused leader for as long as the test holds it.
        KeyLoad__Raft__ReplicationDeadlineMs: "60000",
        // Two principals of one tenant, at voter2's cap of two each, reach it.
        KeyLoad__CommandAdmission__MaxCommandsPerTenant: "4",
      },
      voterEnv: { voter2: { KeyLoad__CommandAdmission__MaxCommandsPerPrincipal: "2" } },
    });
    await ensureFollower(cluster, "voter2");
    const ops = await cluster.createTenant({ tenantId: "acme", principalId: "acme-ops", keys: 2 });
    const billing = await cluster.createTenant({ tenantId: "acme", principalId: "acme-billing" });
    const globex = await cluster.createTenant({ tenantId: "globex", principalId: "globex-ops" });
    const audit = await cluster.createTenant({ tenantId: "acme", principalId: "acme-audit" });
    const [keyA1, keyA2] = ops.keys.map((k) => k.apiKey) as [string, string];
    // Held writes wait for the whole hold; a client timing out meanwhile would only resubmit.
    const patient = (apiKey: string) =>
      cluster.client(apiKey, { adaptiveThrottle: false, requestTimeoutMs: 90_000, deadlineMs: 90_000 });
    const admin = cluster.client(cluster.adminKey, { maxAttempts: 1, adaptiveThrottle: false });
    const a1 = patient(keyA1);

    const hold = await PausedLeader.pause(cluster, "voter2");
    const via = { endpoint: hold.follower.httpUrl };
    const admitted = (commands: number) => waitForDataCommands(admin, via.endpoint, commands);
    const pending: Promise<unknown>[] = [];
    // Awaited after the hold; one that fails meanwhile must not count as unhandled.
    const track = (write: Promise<unknown>): void => {
      write.catch(() => undefined);
      pending.push(write);
    };
    try {
      // Key A1's first write is forwarded to the paused leader and waits there; its second queues
      // behind it. Both bodies claim the system admin.
      for (const n of [1, 2]) {
        const submit = (o: WriteOptions) => putClaiming(a1, `acme/claims-${n}`, { n }, o);
        track(settled(a1, `claims-${n}`, submit, submit({ ...via, commandId: `claims-${n}` })));
        await admitted(n);
      }

      // Key A2 belongs to the same principal, which is at voter2's cap of two.
      const a2 = cluster.client(keyA2, { maxAttempts: 1, adaptiveThrottle: false });
      await expect(a2.put("acme/a2", 1, { ...via, commandId: "a2-1" })).rejects.toMatchObject({
        code: "ResourceExhausted",
        reason: "PrincipalCommands",
        governor: "command",
        lane: "data",
        status: 429,
        commandId: "a2-1",
      });
      // Another principal of the tenant is admitted (and queues), twice: the tenant is then at its cap.
      const queue = (client: KeyLoadClient, key: string, commandId: string) => {
        const submit = (o: WriteOptions) => client.put(key, 1, o);
        track(settled(client, commandId, submit, submit({ ...via, commandId })));
      };
      for (const n of [1, 2]) {
        queue(patient(billing.apiKey), `acme/billing-${n}`, `billing-${n}`);
        await admitted(2 + n);
      }
      // A third principal of the tenant, with nothing of its own in use, is refused for the tenant.
      await expect(
        cluster
          .client(audit.apiKey, { maxAttempts: 1, adaptiveThrottle: false })
          .put("acme/audit", 1, { ...via, commandId: "audit-1" }),
      ).rejects.toMatchObject({
        code: "ResourceExhausted",
        reason: "TenantCommands",
        governor: "command",
        lane: "data",
        status: 429,
        commandId: "audit-1",
      });
      // A principal of another tenant is admitted beside it.
      queue(patient(globex.apiKey), "globex/ops", "globex-1");
      await admitted(5);

      const status = await hold.followerStatus(admin);
      expect(status.commandAdmission.limits).toMatchObject({
        maxCommandsPerPrincipal: 2,
        maxCommandsPerTenant: 4,
      });
      expect(status.commandAdmission.data).toMatchObject({ commands: 5, active: 1, queued: 4 });
      // Charged to the verified principals; nothing to the system admin the bodies claim.
      expect(status.commandAdmission.verifiedScopes).toEqual([
        {
          lane: "data",
          tenantId: "acme",
          principalId: "acme-billing",
          tenantCommands: 4,
          principalCommands: 2,
        },
        { lane: "data", tenantId: "acme", principalId: "acme-ops", tenantCommands: 4, principalCommands: 2 },
        {
          lane: "data",
          tenantId: "globex",
          principalId: "globex-ops",
          tenantCommands: 1,
          principalCommands: 1,
        },
      ]);
      expect(status.httpAdmission.verifiedScopes).toEqual<HttpScopes>([
        {
          pool: "data",
          tenantId: "acme",
          principalId: "acme-billing",
          tenantRequests: 4,
          principalRequests: 2,
        },
        { pool: "data", tenantId: "acme", principalId: "acme-ops", tenantRequests: 4, principalRequests: 2 },
        {
          pool: "data",
          tenantId: "globex",
          principalId: "globex-ops",
          tenantRequests: 1,
          principalRequests: 1,
        },
        { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
      ]);
      // The cap is voter2's own: the other follower keeps the default.
      const other = await admin.admissionStatus({ endpoint: hold.other.httpUrl });
      expect(other.commandAdmission.limits).toMatchObject({
        maxCommandsPerPrincipal: 64,
        maxCommandsPerTenant: 4,
      });
    } finally {
      hold.resume();
    }
    await Promise.all(pending);

    // Each write applied once, in its writer's tenant; the system tenant got nothing.
    for (const n of [1, 2]) {
      expect(await a1.get(`acme/claims-${n}`)).toEqual({ key: `acme/claims-${n}`, value: { n }, version: 1 });
      await expect(admin.get(`acme/claims-${n}`)).rejects.toBeInstanceOf(NotFoundError);
      await expect(admin.getCommand(`claims-${n}`)).rejects.toBeInstanceOf(NotFoundError);
    }
    // Claims do not authorize: the writer reaches no admin route, not even within its own tenant,
    // whatever its body says.
    const writer = cluster.client(keyA1, { maxAttempts: 1, adaptiveThrottle: false });
    await expect(
      writer.putPrincipal({ principalId: "acme-ops", tenantId: "acme", roles: ["admin"] }),
    ).rejects.toBeInstanceOf(PermissionDeniedError);
    const ownKey = await writer.raw({
      method: "POST",
      path: "/v1/admin/principals/acme-ops/keys",
      body: JSON.stringify(CLAIMS),
      commandId: "claims-key",
    });
    expect({ status: ownKey.status, body: await ownKey.body.json() }).toMatchObject({
      status: 403,
      body: { error: { code: "PermissionDenied" } },
    });
    await expect(writer.admissionStatus()).rejects.toBeInstanceOf(PermissionDeniedError);
    // The principal's and the tenant's caps are free again, and the IDs the refused writes carried
    // were never taken.
    await expect(patient(keyA2).put("acme/a2", 1, { ...via, commandId: "a2-1" })).resolves.toMatchObject({
      commandId: "a2-1",
      version: 1,
    });
    await expect(
      patient(audit.apiKey).put("acme/audit", 1, { ...via, commandId: "audit-1" }),
    ).resolves.toMatchObject({ commandId: "audit-1", version: 1 });
  });
});
