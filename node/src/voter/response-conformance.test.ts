import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ROUTES, type RouteSpec } from "../http/routes.js";
import { SchemaChecker } from "./test-fixtures/schema-checker.js";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

let cluster: VoterCluster;
let url: string;
let checker: SchemaChecker;

beforeAll(async () => {
  checker = await SchemaChecker.start();
  cluster = await VoterCluster.start();
  const leader = await cluster.waitForLeader();
  url = cluster.voter((leader + 1) % 3).httpUrl;
});

afterAll(async () => {
  await checker?.close();
  await cluster?.dispose();
});

function routeOf(method: string, path: string): RouteSpec {
  const bare = path.split("?", 1)[0]!;
  const route = ROUTES.find(
    (r) => r.method === method && new RegExp(`^${r.path.replace(/\{[A-Za-z]+\}/g, "[^/]+")}$`).test(bare),
  );
  if (route === undefined) throw new Error(`no route for ${method} ${bare}`);
  return route;
}

/** Calls a route on a real voter and checks its status and body against what the route documents. */
async function documented(
  method: string,
  path: string,
  options: { body?: unknown; commandId?: string } = {},
): Promise<Record<string, unknown>> {
  const route = routeOf(method, path);
  const answer = await call(url, method, path, options);
  expect({ route: `${method} ${path}`, status: answer.status }).toEqual({
    route: `${method} ${path}`,
    status: route.status,
  });
  expect({
    route: `${method} ${path}`,
    error: await checker.response(route, answer.body),
  }).toEqual({ route: `${method} ${path}`, error: null });
  return answer.body;
}

describe("answers of a real voter", () => {
  it("match the response schemas the routes document", async () => {
    await documented("POST", "/v1/admin/principals", {
      body: { principalId: "p1", tenantId: "t1", roles: ["writer"] },
      commandId: "a1",
    });
    const key = await documented("POST", "/v1/admin/principals/p1/keys", { commandId: "a2" });
    expect(key.apiKey).toEqual(expect.any(String));
    // A retry under the same ID answers the key it made, whose plain text no voter kept.
    const retried = await documented("POST", "/v1/admin/principals/p1/keys", { commandId: "a2" });
    expect(retried).toEqual({ commandId: "a2", principalId: "p1", keyId: key.keyId });
    await documented("PUT", "/v1/catalog/doc", { body: { value: { text: "hello world" } }, commandId: "c1" });
    await documented("GET", "/v1/catalog/doc");
    await documented("POST", "/v1/catalog/bulk-get", { body: { keys: ["doc", "none"] } });
    await documented("POST", "/v1/query", { body: { prefix: "d" } });
    await documented("POST", "/v1/search", { body: { query: "hello" } });
    await documented("PUT", "/v1/graph/edges", { body: { from: "a", type: "t", to: "b" }, commandId: "g1" });
    await documented("POST", "/v1/graph/traverse", { body: { start: "a" } });
    await documented("DELETE", "/v1/graph/edges", {
      body: { from: "a", type: "t", to: "b" },
      commandId: "g2",
    });
    await documented("POST", "/v1/queues/q/messages", { body: { body: { n: 1 } }, commandId: "q1" });
    const lease = await documented("POST", "/v1/queues/q/leases", { body: {}, commandId: "q2" });
    const messageId = (lease.messages as { messageId: string }[])[0]!.messageId;
    await documented("POST", `/v1/queues/q/messages/${messageId}/ack`, {
      body: { leaseToken: lease.leaseToken },
      commandId: "q3",
    });
    // A check of an absent key answers version 0, and the outbox its messages.
    await documented("POST", "/v1/transactions", {
      body: {
        operations: [
          { op: "put", key: "tx", value: 1 },
          { op: "check", key: "absent", version: 0 },
        ],
        outbox: [{ queue: "q", body: { n: 2 } }],
      },
      commandId: "t1",
    });
    for (const n of [3, 4]) {
      await documented("POST", "/v1/queues/q/messages", { body: { body: { n } }, commandId: `q-${n}` });
    }
    const more = await documented("POST", "/v1/queues/q/leases", { body: { max: 3 }, commandId: "q4" });
    const [m1, m2, m3] = (more.messages as { messageId: string }[]).map((m) => m.messageId);
    const leased = { leaseToken: more.leaseToken };
    await documented("POST", `/v1/queues/q/messages/${m1}/nack`, { body: leased, commandId: "q5" });
    await documented("POST", `/v1/queues/q/messages/${m2}/renew`, { body: leased, commandId: "q6" });
    await documented("POST", `/v1/queues/q/messages/${m3}/complete`, {
      body: { ...leased, operations: [{ op: "put", key: "done", value: true }] },
      commandId: "q7",
    });
    await documented("PUT", "/v1/subscriptions/s", { body: { prefix: "d" }, commandId: "s1" });
    const delivery = await documented("POST", "/v1/subscriptions/s/deliveries", {
      body: {},
      commandId: "s2",
    });
    await documented("POST", `/v1/subscriptions/s/deliveries/${String(delivery.deliveryId)}/complete`, {
      body: { operations: [{ op: "put", key: "projected", value: 1 }] },
      commandId: "s3",
    });
    await documented("PUT", "/v1/catalog/doc2", { body: { value: 2 }, commandId: "c4" });
    const next = await documented("POST", "/v1/subscriptions/s/deliveries", { body: {}, commandId: "s4" });
    await documented("POST", `/v1/subscriptions/s/deliveries/${String(next.deliveryId)}/ack`, {
      commandId: "s5",
    });
    await documented("GET", "/v1/admin/cluster/members");
    await documented("PUT", "/v1/membership/m1", {
      body: { status: "active", address: "h:1" },
      commandId: "m1",
    });
    await documented("GET", "/v1/membership");
    await documented("POST", "/v1/dispatch/ops", { body: { directive: "go" }, commandId: "d1" });
    await documented("GET", "/v1/dispatch/ops?after=0");
    await documented("GET", "/v1/commands/c1");
    // A command that committed as a refusal has that refusal for its outcome.
    const stale = await call(url, "PUT", "/v1/catalog/doc", {
      body: { value: 1, expectedVersion: 9 },
      commandId: "c3",
    });
    expect(stale.status).toBe(412);
    const refusal = await documented("GET", "/v1/commands/c3");
    expect(refusal).toMatchObject({ status: "failed", error: { code: "FailedPrecondition" } });
    await documented("GET", "/v1/admin/admission");
    await documented("DELETE", "/v1/catalog/doc", { commandId: "c2" });
    await documented("DELETE", `/v1/admin/principals/p1/keys/${String(key.keyId)}`, { commandId: "a3" });
  });

  it("match the error body schema", async () => {
    const missing = await call(url, "GET", "/v1/catalog/none");
    expect(missing.status).toBe(404);
    expect(await checker.error(missing.body)).toBeNull();
  });
});
