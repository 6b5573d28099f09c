import type { TestCluster } from "@keyload/apphost/testing";
import {
  CommandIdConflictError,
  FailedPreconditionError,
  InvalidArgumentError,
  type KeyLoadClient,
  LeaseLostError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  type Written,
} from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { failure } from "./test-fixtures/failure.js";
import { SentCommandIds } from "./test-fixtures/sent-command-ids.js";

/**
 * Command admission keeps 64 KiB per node and a data body is capped at 256 KiB, so one large write is
 * refused (429) and a chunked upload.
 */
const MAX_RETAINED_BYTES = 65_536;
const MAX_DATA_BODY_BYTES = 262_144;
const ADMISSION_LIMITS = {
  KeyLoad__CommandAdmission__MaxRetainedBytes: String(MAX_RETAINED_BYTES),
  KeyLoad__HttpAdmission__MaxDataBodyBytes: String(MAX_DATA_BODY_BYTES),
};

const startCluster = clusterPerTest();

/** A cluster for one group of routes, its admin client and every voter's URL. */
async function routeCluster(
  env?: Readonly<Record<string, string>>,
): Promise<{ cluster: TestCluster; admin: KeyLoadClient; urls: string[] }> {
  const cluster = await startCluster(env === undefined ? {} : { env });
  return { cluster, admin: cluster.adminClient(), urls: cluster.voters.map((v) => v.httpUrl) };
}

/** Every method of the client against a real three-voter cluster, a cluster per group of routes. */
describe("KeyLoadClient against a three-voter cluster", () => {
  it("documents and commands, queries, search, transactions and the graph", async () => {
    const { admin, urls } = await routeCluster();
    {
      // Puts, gets and deletes documents, with any key and on any voter.
      const key = "docs/ü 1?#%";
      const put = await admin.put(key, { title: "one" }, { commandId: "put-doc-1" });
      expect(put).toEqual({ commandId: "put-doc-1", key, version: 1 });
      for (const endpoint of urls) {
        expect(await admin.get(key, { endpoint })).toEqual({ key, value: { title: "one" }, version: 1 });
      }
      const second = await admin.put(key, { title: "two" }, { expectedVersion: 1 });
      expect(second.version).toBe(2);
      expect(second.commandId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
      const deleted = await admin.delete(key, { expectedVersion: 2 });
      expect(deleted).toMatchObject({ key, version: 3 });
      expect(await failure(admin.get(key))).toBeInstanceOf(NotFoundError);
    }
    {
      // Answers a version mismatch with FailedPreconditionError, bound to the command ID.
      await admin.put("fp", 1);
      const error = await failure(admin.put("fp", 2, { expectedVersion: 0, commandId: "fp-0" }));
      expect(error).toBeInstanceOf(FailedPreconditionError);
      expect(error).toMatchObject({ code: "FailedPrecondition", status: 412, commandId: "fp-0" });
      await expect(admin.delete("fp", { expectedVersion: 7 })).rejects.toBeInstanceOf(
        FailedPreconditionError,
      );
    }
    {
      // Returns a resubmitted command's original outcome, and CommandIdConflict for another body.
      const first = await admin.put("dedup", { n: 1 }, { commandId: "dedup-1" });
      const again = await admin.put("dedup", { n: 1 }, { commandId: "dedup-1", endpoint: urls[2] });
      expect(again).toEqual(first);
      expect((await admin.get("dedup")).version).toBe(1);
      const error = await failure(admin.put("dedup", { n: 2 }, { commandId: "dedup-1" }));
      expect(error).toBeInstanceOf(CommandIdConflictError);
      expect(error).toMatchObject({ status: 409, commandId: "dedup-1" });
    }
    {
      // Reads a command's durable outcome, and resolves one by resubmitting it.
      const put = await admin.put("outcome", "v", { commandId: "outcome-1" });
      const outcome = await admin.getCommand("outcome-1");
      expect(outcome).toMatchObject({
        commandId: "outcome-1",
        status: "committed",
        result: { key: "outcome", version: 1 },
      });
      expect(outcome.index).toBeGreaterThan(0);
      expect(await failure(admin.getCommand("never-sent"))).toBeInstanceOf(NotFoundError);

      const resolved = await admin.resolveOutcome("outcome-1", (o) => admin.put("outcome", "v", o));
      expect(resolved).toEqual(put);
      const fresh = await admin.resolveOutcome("outcome-2", (o) => admin.put("outcome", "w", o));
      expect(fresh).toEqual({ commandId: "outcome-2", key: "outcome", version: 2 });
      await expect(
        admin.resolveOutcome("outcome-3", (o) => admin.put("outcome", "x", { ...o, expectedVersion: 1 })),
      ).rejects.toBeInstanceOf(FailedPreconditionError);
      expect(await admin.getCommand("outcome-3")).toMatchObject({
        status: "failed",
        error: { code: "FailedPrecondition" },
      });
    }
    {
      // Answers malformed requests with InvalidArgumentError.
      const badId = await failure(admin.put("k", 1, { commandId: "not valid!" }));
      expect(badId).toBeInstanceOf(InvalidArgumentError);
      expect(badId).toMatchObject({ status: 400, reason: "InvalidCommandId", commandId: "not valid!" });
      await expect(admin.lease("jobs", { max: 0 })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(admin.get("")).rejects.toMatchObject({ status: 400, reason: "InvalidParameter" });
    }
    {
      // Bulk-gets, queries page by page, and searches.
      for (const [i, color] of ["red", "blue", "red", "green", "red"].entries()) {
        await admin.put(`fruit/${i}`, { color, text: `a ${color} fruit number ${i}` });
      }
      const bulk = await admin.bulkGet(["fruit/0", "fruit/missing"]);
      expect(bulk.items).toEqual([
        { key: "fruit/0", found: true, value: { color: "red", text: "a red fruit number 0" }, version: 1 },
        { key: "fruit/missing", found: false },
      ]);
      const page = await admin.query({ prefix: "fruit/", limit: 2 });
      expect(page.items.map((d) => d.key)).toEqual(["fruit/0", "fruit/1"]);
      expect(page.next).toBe("fruit/1");
      const reds: string[] = [];
      for await (const doc of admin.queryAll<{ color: string }>({
        prefix: "fruit/",
        where: [{ path: "$.color", op: "eq", value: "red" }],
        limit: 1,
      })) {
        reds.push(doc.key);
      }
      expect(reds).toEqual(["fruit/0", "fruit/2", "fruit/4"]);
      const found = await admin.search({ query: "green", prefix: "fruit/" });
      expect(found.hits.map((h) => h.key)).toEqual(["fruit/3"]);
    }
    {
      // Commits a transaction with its outbox atomically.
      const result = await admin.transaction({
        operations: [
          { op: "put", key: "tx/a", value: 1, expectedVersion: 0 },
          { op: "check", key: "tx/b", version: 0 },
        ],
        outbox: [{ queue: "tx-events", body: { created: "tx/a" } }],
      });
      expect(result.results).toEqual([
        { op: "put", key: "tx/a", version: 1 },
        { op: "check", key: "tx/b", version: 0 },
      ]);
      expect(result.outbox).toHaveLength(1);
      expect(result.outbox[0]).toMatchObject({ queue: "tx-events" });
      const lease = await admin.lease("tx-events");
      expect(lease.messages.map((m) => m.body)).toEqual([{ created: "tx/a" }]);
      await expect(
        admin.transaction({ operations: [{ op: "check", key: "tx/a", version: 5 }] }),
      ).rejects.toBeInstanceOf(FailedPreconditionError);
    }
    {
      // Puts, traverses and deletes graph edges.
      const edge = { from: "g/a", type: "knows", to: "g/b" };
      expect(await admin.putEdge(edge)).toMatchObject({ ...edge, created: true });
      await admin.putEdge({ from: "g/b", type: "knows", to: "g/c" });
      const traversal = await admin.traverse({ start: "g/a", maxDepth: 3 });
      expect(traversal.nodes.map((n) => n.id)).toEqual(["g/a", "g/b", "g/c"]);
      expect(traversal.nodes[1]!.via).toEqual(edge);
      expect(await admin.deleteEdge(edge)).toMatchObject(edge);
      expect((await admin.traverse({ start: "g/a" })).nodes.map((n) => n.id)).toEqual(["g/a"]);
    }
  });

  it("queues, subscriptions, membership and dispatch", async () => {
    const { admin } = await routeCluster();
    {
      // Enqueues, leases, renews, nacks, acks and completes queue messages.
      const enqueued = await admin.enqueue("jobs", { job: 1 });
      expect(enqueued).toMatchObject({ queue: "jobs" });
      const lease = await admin.lease<{ job: number }>("jobs", { max: 1, visibilityTimeoutMs: 30_000 });
      const message = lease.messages[0]!;
      expect(message).toMatchObject({ messageId: enqueued.messageId, body: { job: 1 }, attempts: 1 });
      const token = lease.leaseToken!;
      const renewed = await admin.renew("jobs", message.messageId, token, { visibilityTimeoutMs: 60_000 });
      expect(renewed.leaseExpiresAtMs).toBeGreaterThan(lease.leaseExpiresAtMs!);
      expect(await admin.nack("jobs", message.messageId, token)).toMatchObject({ deadLettered: false });
      const again = await admin.lease("jobs");
      expect(again.messages[0]).toMatchObject({ messageId: message.messageId, attempts: 2 });
      expect(await failure(admin.ack("jobs", message.messageId, token))).toBeInstanceOf(LeaseLostError);
      expect(await admin.ack("jobs", message.messageId, again.leaseToken!)).toMatchObject({ queue: "jobs" });

      const second = await admin.enqueue("jobs", { job: 2 });
      const held = await admin.lease("jobs");
      const done = await admin.complete("jobs", second.messageId, held.leaseToken!, {
        operations: [{ op: "put", key: "jobs/2", value: "done" }],
      });
      expect(done).toMatchObject({
        messageId: second.messageId,
        results: [{ op: "put", key: "jobs/2", version: 1 }],
      });
      expect((await admin.lease("jobs")).messages).toEqual([]);
    }
    {
      // Creates subscriptions, delivers changes, acks and completes deliveries.
      expect(await admin.putSubscription("orders", "order/", { from: "end" })).toMatchObject({
        name: "orders",
        prefix: "order/",
        created: true,
      });
      await admin.put("order/1", { total: 5 });
      const delivery = await admin.deliver("orders", { max: 10 });
      expect(delivery.changes.map((c) => [c.kind, c.key, c.version])).toEqual([["put", "order/1", 1]]);
      const acked = await admin.ackDelivery("orders", delivery.deliveryId!);
      expect(acked.cursor).toBeGreaterThanOrEqual(delivery.changes[0]!.seq);

      await admin.put("order/2", { total: 7 });
      const next = await admin.deliver("orders");
      const completed = await admin.completeDelivery("orders", next.deliveryId!, {
        operations: [{ op: "put", key: "totals/orders", value: 12 }],
      });
      expect(completed).toMatchObject({ name: "orders", results: [{ key: "totals/orders", version: 1 }] });
      expect((await admin.deliver("orders")).deliveryId).toBeNull();
    }
    {
      // Writes and lists membership rows.
      const row = await admin.putMember("silo-1", { status: "active", address: "10.0.0.1:11111" });
      expect(row).toMatchObject({ memberId: "silo-1", status: "active", tableVersion: 1 });
      await admin.putMember("silo-1", { iAmAlive: true });
      const table = await admin.membership();
      expect(table.tableVersion).toBe(1);
      expect(table.members.map((m) => m.memberId)).toEqual(["silo-1"]);
      await expect(
        admin.putMember("silo-1", { status: "dead", address: "10.0.0.1:11111", etag: "stale" }),
      ).rejects.toBeInstanceOf(FailedPreconditionError);
    }
    {
      // Appends and reads dispatch directives.
      expect(await admin.dispatch("ops", "drain", { node: "n1" })).toMatchObject({
        channel: "ops",
        sequence: 1,
      });
      await admin.dispatch("ops", "resume");
      const all = await admin.readDispatch("ops");
      expect(all.directives.map((d) => [d.sequence, d.directive, d.data])).toEqual([
        [1, "drain", { node: "n1" }],
        [2, "resume", null],
      ]);
      const after = await admin.readDispatch("ops", { after: 1, limit: 5 });
      expect(after.directives.map((d) => d.sequence)).toEqual([2]);
    }
  });

  it("principals, keys and roles, raw answers, health, metrics and the API document, and the command ID of every write route", async () => {
    const { cluster, admin, urls } = await routeCluster();
    {
      // Manages principals and keys, and enforces roles and credentials.
      expect(
        await admin.putPrincipal({ principalId: "viewer", tenantId: "system", roles: ["reader"] }),
      ).toMatchObject({
        principalId: "viewer",
        created: true,
      });
      const key = await admin.createKey("viewer");
      expect(key.apiKey?.length).toBeGreaterThan(10);
      const viewer = cluster.client(key.apiKey);
      await admin.put("shared", "visible");
      expect((await viewer.get("shared")).value).toBe("visible");
      const denied = await failure(viewer.put("shared", "nope", { commandId: "viewer-put" }));
      expect(denied).toBeInstanceOf(PermissionDeniedError);
      expect(denied).toMatchObject({ status: 403, commandId: "viewer-put" });
      await expect(viewer.admissionStatus()).rejects.toBeInstanceOf(PermissionDeniedError);

      expect(await admin.deleteKey("viewer", key.keyId)).toMatchObject({
        principalId: "viewer",
        keyId: key.keyId,
      });
      const revoked = await failure(viewer.get("shared"));
      expect(revoked).toBeInstanceOf(UnauthenticatedError);
      expect(revoked).toMatchObject({ status: 401, code: "Unauthenticated" });
      await expect(cluster.client().get("shared")).rejects.toBeInstanceOf(UnauthenticatedError);
    }
    {
      // Hands out a raw answer whose body streams.
      await admin.put("raw", { big: "r".repeat(12_000) });
      const response = await admin.raw({ method: "GET", path: "/v1/catalog/raw", endpoint: urls[1] });
      expect(response.status).toBe(200);
      let bytes = 0;
      for await (const chunk of response.body) bytes += (chunk as Buffer).byteLength;
      expect(bytes).toBeGreaterThan(12_000);
      const anonymous = await admin.raw({
        method: "GET",
        path: "/v1/catalog/raw",
        headers: { Authorization: "" },
      });
      expect(anonymous.status).toBe(401);
      expect(await anonymous.body.json()).toMatchObject({ error: { code: "Unauthenticated" } });
    }
    {
      // Reads each voter's health, metrics and API document.
      for (const endpoint of urls) {
        expect(await admin.live({ endpoint })).toMatchObject({ live: true });
        expect(await admin.ready({ endpoint })).toMatchObject({ ready: true });
      }
      expect(await admin.metrics()).toContain("# TYPE");
      const doc = await admin.openApi();
      expect(doc).toMatchObject({ openapi: expect.stringMatching(/^3\.1/) });
      expect(Object.keys(doc.paths as object)).toContain("/v1/catalog/{key}");
    }
    {
      // Returns the command ID it generated on the result of every write route.
      const sent = new SentCommandIds();
      const results: Written[] = [];
      const keep = async <T extends Written>(write: Promise<T>): Promise<T> => {
        const result = await write;
        results.push(result);
        return result;
      };
      await keep(admin.put("ids/a", 1));
      await keep(admin.delete("ids/a"));
      await keep(admin.transaction({ operations: [{ op: "put", key: "ids/b", value: 1 }] }));
      await keep(admin.putEdge({ from: "ids/x", type: "t", to: "ids/y" }));
      await keep(admin.deleteEdge({ from: "ids/x", type: "t", to: "ids/y" }));
      const message = await keep(admin.enqueue("ids-queue", 1));
      let lease = await keep(admin.lease("ids-queue"));
      await keep(admin.renew("ids-queue", message.messageId, lease.leaseToken!));
      await keep(admin.nack("ids-queue", message.messageId, lease.leaseToken!));
      lease = await keep(admin.lease("ids-queue"));
      await keep(admin.ack("ids-queue", message.messageId, lease.leaseToken!));
      const second = await keep(admin.enqueue("ids-queue", 2));
      lease = await keep(admin.lease("ids-queue"));
      await keep(admin.complete("ids-queue", second.messageId, lease.leaseToken!));
      await keep(admin.putSubscription("ids-sub", "ids/c", { from: "end" }));
      await admin.put("ids/c1", 1);
      const delivery = await keep(admin.deliver("ids-sub"));
      await keep(admin.ackDelivery("ids-sub", delivery.deliveryId!));
      await admin.put("ids/c2", 1);
      const next = await keep(admin.deliver("ids-sub"));
      await keep(admin.completeDelivery("ids-sub", next.deliveryId!));
      await keep(admin.putMember("ids-member", { status: "active", address: "10.0.0.9:1" }));
      await keep(admin.dispatch("ids-channel", "go"));
      await keep(admin.putPrincipal({ principalId: "ids-p", tenantId: "ids-t", roles: ["reader"] }));
      const key = await keep(admin.createKey("ids-p"));
      await keep(admin.deleteKey("ids-p", key.keyId));
      sent.close();
      expect(results).toHaveLength(24);
      for (const result of results) {
        expect(result.commandId).toMatch(
          /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
        );
        // The ID on the result is the one the client sent, once: no write here needed a retry.
        expect(sent.count(result.commandId)).toBe(1);
      }
      expect(new Set(results.map((r) => r.commandId)).size).toBe(results.length);
    }
  });

  it("admission: each voter's limits and usage, a 429 with its governor and Retry-After, retries within the budget, the local throttle, and a chunked upload", async () => {
    const { cluster, admin, urls } = await routeCluster(ADMISSION_LIMITS);
    // Reports each voter's admission limits and usage.
    for (const [i, endpoint] of urls.entries()) {
      const status = await admin.admissionStatus({ endpoint });
      expect(status.nodeId).toBe(`voter${i + 1}`);
      expect(status.commandAdmission.limits.maxRetainedBytes).toBe(MAX_RETAINED_BYTES);
      expect(status.httpAdmission.limits.maxDataBodyBytes).toBe(MAX_DATA_BODY_BYTES);
      expect(status.commandAdmission.data).toEqual({ commands: 0, retainedBytes: 0, queued: 0, active: 0 });
      expect(status.httpAdmission.data.requests).toBe(1);
      expect(status.httpAdmission.verifiedScopes).toEqual([
        { pool: "data", tenantId: "system", principalId: "admin", tenantRequests: 1, principalRequests: 1 },
      ]);
    }
    {
      // Surfaces a command admission refusal (429) with its governor, lane and Retry-After.
      // Without the throttle: after one refusal it would reject half of this fresh client's next requests.
      const client = cluster.client(cluster.adminKey, {
        retryResourceExhausted: false,
        adaptiveThrottle: false,
      });
      const error = await failure(client.put("big", "x".repeat(20_000), { commandId: "big-1" }));
      expect(error).toBeInstanceOf(ResourceExhaustedError);
      expect(error).toMatchObject({
        status: 429,
        reason: "CommandBytes",
        governor: "command",
        lane: "data",
        retryAfter: 1_000,
        commandId: "big-1",
      });
      // The refusal took no command ID: the same ID carries a smaller command.
      expect(await client.put("big", "x", { commandId: "big-1" })).toMatchObject({
        commandId: "big-1",
        version: 1,
      });
    }
    // Every voter has the same small lane, and a follower's own refusal sends a call on to another
    // voter at once: the leader's refusal (details.leader) is the one that speaks for the cluster.
    const leaderUrl = (await cluster.leader())!.httpUrl;
    {
      // Waits out the leader's refusal's Retry-After before trying again, within its retry budget.
      const client = cluster.client(cluster.adminKey, {
        adaptiveThrottle: false,
        maxAttempts: 5,
        retryBudget: { ratio: 0, capacity: 1, refillPerSecond: 0 },
      });
      const sent = new SentCommandIds();
      const started = Date.now();
      const error = await failure(
        client.put("big-retry", "x".repeat(20_000), { commandId: "big-retry", endpoint: leaderUrl }),
      );
      const elapsed = Date.now() - started;
      sent.close();
      expect(error).toMatchObject({
        code: "ResourceExhausted",
        reason: "CommandBytes",
        commandId: "big-retry",
      });
      // The budget held one retry, sent under the same ID once the voter's Retry-After (1 s) had passed.
      expect(sent.count("big-retry")).toBe(2);
      expect(elapsed).toBeGreaterThanOrEqual(1_000);
    }
    {
      // Throttles locally, without asking the cluster, once the cluster refuses its requests.
      // k 2 and one refusal: max(0, (1 - 2 x 0) / (1 + 1)) = 0.5, above the injected 0.4.
      const client = cluster.client(cluster.adminKey, {
        retryResourceExhausted: false,
        adaptiveThrottle: { k: 2 },
        random: () => 0.4,
      });
      const sent = new SentCommandIds();
      await expect(
        client.put("big-throttled", "x".repeat(20_000), { endpoint: leaderUrl }),
      ).rejects.toMatchObject({ governor: "command", details: { leader: true } });
      const local = await failure(client.put("small", 1, { commandId: "throttled-1" }));
      sent.close();
      expect(local).toBeInstanceOf(ResourceExhaustedError);
      expect(local).toMatchObject({
        governor: "client",
        reason: "ClientThrottled",
        commandId: "throttled-1",
      });
      expect(sent.count("throttled-1")).toBe(0);
    }
    {
      // Streams a chunked upload; one over the data body cap is the voter's 413, not a lost connection.
      const encoder = new TextEncoder();
      async function* small() {
        yield encoder.encode('{"value":"');
        for (let i = 0; i < 4; i++) yield encoder.encode("y".repeat(1_000));
        yield encoder.encode('"}');
      }
      const put = await admin.upload("PUT", "/v1/catalog/uploaded", () => small(), { commandId: "up-1" });
      expect(put).toEqual({ commandId: "up-1", key: "uploaded", version: 1 });
      expect((await admin.get<string>("uploaded")).value).toHaveLength(4_000);

      async function* huge() {
        yield encoder.encode('{"value":"');
        for (let i = 0; i < 80; i++) yield encoder.encode("z".repeat(4_096));
        yield encoder.encode('"}');
      }
      for (let attempt = 0; attempt < 10; attempt++) {
        const id = `up-huge-${attempt}`;
        const error = await failure(admin.upload("PUT", "/v1/catalog/huge", () => huge(), { commandId: id }));
        expect(error).toBeInstanceOf(ResourceExhaustedError);
        expect(error).toMatchObject({
          status: 413,
          reason: "BodyTooLarge",
          governor: "http",
          pool: "data",
          commandId: id,
          retryAfter: undefined,
        });
      }
      expect(await failure(admin.get("huge"))).toBeInstanceOf(NotFoundError);
    }
  });
});
