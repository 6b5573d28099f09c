import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ApiRoute } from "./routes.js";
import { ROUTES } from "./routes.js";
import { bearer, KEYS } from "./test-fixtures/fake-voter-service.js";
import { type HttpFixture, httpFixture, idleStatus } from "./test-fixtures/http-fixture.js";

interface Sample {
  readonly url: string;
  /** Sent as JSON text; absent for a bodiless request. */
  readonly body?: unknown;
  readonly params: Record<string, string>;
  readonly query?: Record<string, string>;
}

const writeSet = {
  operations: [{ op: "put", key: "a", value: { n: 1 } }],
  outbox: [{ queue: "q", body: "hi" }],
};

/** One request per route of the contract; a route without a sample fails the happy-path test. */
const SAMPLES: Record<string, Sample> = {
  "catalog.put": {
    url: "/v1/catalog/orders%2F42%20%C3%A9",
    body: { value: { total: 3 } },
    params: { key: "orders/42 é" },
  },
  "catalog.delete": { url: "/v1/catalog/doc-1", params: { key: "doc-1" } },
  transaction: {
    url: "/v1/transactions",
    body: {
      operations: [
        { op: "put", key: "a", value: 1 },
        { op: "check", key: "b", version: 0 },
      ],
    },
    params: {},
  },
  "graph.putEdge": { url: "/v1/graph/edges", body: { from: "a", type: "likes", to: "b" }, params: {} },
  "graph.deleteEdge": { url: "/v1/graph/edges", body: { from: "a", type: "likes", to: "b" }, params: {} },
  "queue.enqueue": {
    url: "/v1/queues/jobs/messages",
    body: { body: { task: 1 } },
    params: { queue: "jobs" },
  },
  "queue.complete": {
    url: "/v1/queues/jobs/messages/12.0/complete",
    body: { leaseToken: "tok", ...writeSet },
    params: { queue: "jobs", messageId: "12.0" },
  },
  "subscription.put": {
    url: "/v1/subscriptions/feed",
    body: { prefix: "orders/" },
    params: { name: "feed" },
  },
  "subscription.complete": {
    url: "/v1/subscriptions/feed/deliveries/d1/complete",
    body: writeSet,
    params: { name: "feed", deliveryId: "d1" },
  },
  "admin.putPrincipal": {
    url: "/v1/admin/principals",
    body: { principalId: "p9", tenantId: "t9", roles: ["reader"] },
    params: {},
  },
  "admin.createKey": { url: "/v1/admin/principals/p9/keys", params: { principalId: "p9" } },
  "admin.deleteKey": { url: "/v1/admin/principals/p9/keys/k1", params: { principalId: "p9", keyId: "k1" } },
  "catalog.get": { url: "/v1/catalog/doc-1", params: { key: "doc-1" } },
  "command.get": { url: "/v1/commands/cmd:1", params: { commandId: "cmd:1" } },
  "admin.admissionStatus": { url: "/v1/admin/admission", params: {} },
  "cluster.members": { url: "/v1/admin/cluster/members", params: {} },
  "cluster.addLearner": {
    url: "/v1/admin/cluster/members",
    body: { memberId: "voter3~0a1b2c3d" },
    params: {},
  },
  "cluster.promote": {
    url: "/v1/admin/cluster/members/voter3~0a1b2c3d/promote",
    params: { clusterMemberId: "voter3~0a1b2c3d" },
  },
  "cluster.remove": {
    url: "/v1/admin/cluster/members/voter3",
    params: { clusterMemberId: "voter3" },
  },
  "cluster.transferLeader": { url: "/v1/admin/cluster/leader", body: { memberId: "voter2" }, params: {} },
  "catalog.bulkGet": { url: "/v1/catalog/bulk-get", body: { keys: ["a", "b"] }, params: {} },
  query: {
    url: "/v1/query",
    body: { prefix: "a", where: [{ path: "$.x", op: "gt", value: 1 }] },
    params: {},
  },
  search: { url: "/v1/search", body: { query: "hello wor*" }, params: {} },
  "graph.traverse": { url: "/v1/graph/traverse", body: { start: "a", direction: "both" }, params: {} },
  "queue.lease": { url: "/v1/queues/jobs/leases", body: { max: 2 }, params: { queue: "jobs" } },
  "queue.ack": {
    url: "/v1/queues/jobs/messages/12.0/ack",
    body: { leaseToken: "tok" },
    params: { queue: "jobs", messageId: "12.0" },
  },
  "queue.nack": {
    url: "/v1/queues/jobs/messages/12.0/nack",
    body: { leaseToken: "tok", delayMs: 100 },
    params: { queue: "jobs", messageId: "12.0" },
  },
  "queue.renew": {
    url: "/v1/queues/jobs/messages/12.0/renew",
    body: { leaseToken: "tok", visibilityTimeoutMs: 5000 },
    params: { queue: "jobs", messageId: "12.0" },
  },
  "subscription.deliver": { url: "/v1/subscriptions/feed/deliveries", params: { name: "feed" } },
  "subscription.ack": {
    url: "/v1/subscriptions/feed/deliveries/d1/ack",
    params: { name: "feed", deliveryId: "d1" },
  },
  "membership.put": {
    url: "/v1/membership/silo-1",
    body: { status: "active", address: "10.0.0.1:11111" },
    params: { memberId: "silo-1" },
  },
  "membership.list": { url: "/v1/membership", params: {} },
  "dispatch.append": {
    url: "/v1/dispatch/ops",
    body: { directive: "rebalance", data: { n: 2 } },
    params: { channel: "ops" },
  },
  "dispatch.read": {
    url: "/v1/dispatch/ops?after=5&ignored=1",
    params: { channel: "ops" },
    query: { after: "5" },
  },
};

const API_ROUTES = ROUTES.filter((route): route is ApiRoute => route.type !== "ops");

let fx: HttpFixture;
beforeEach(() => {
  fx = httpFixture();
});
afterEach(async () => {
  expect(fx.governor.status()).toMatchObject(idleStatus());
  await fx.close();
});

function caller(route: ApiRoute): "admin" | "writer" {
  return route.roles.includes("writer") ? "writer" : "admin";
}

describe("every route's happy path", () => {
  it.each(API_ROUTES.map((route) => [`${route.method} ${route.path}`, route] as const))(
    "%s",
    async (_, route) => {
      const sample = SAMPLES[route.kind];
      expect(sample, `a sample request for ${route.kind}`).toBeDefined();
      if (sample === undefined) return;
      const who = caller(route);
      const text = sample.body === undefined ? undefined : JSON.stringify(sample.body);
      const response = await fx.app.inject({
        method: route.method,
        url: sample.url,
        headers: {
          authorization: bearer(who),
          ...(route.type === "command" ? { "keyload-command-id": "cmd-1" } : {}),
          ...(text === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(text === undefined ? {} : { payload: text }),
      });
      expect(response.statusCode, response.body).toBe(route.status);
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      const body = response.json();
      if (route.type === "command") {
        expect(fx.service.submitted).toHaveLength(1);
        const command = fx.service.submitted[0]!;
        expect(command).toMatchObject({
          kind: route.kind,
          params: sample.params,
          commandId: "cmd-1",
          identity: KEYS[who].identity,
          lane: route.lane,
        });
        expect(command.payload.text()).toBe(text ?? "");
        expect(command.signal.aborted).toBe(false);
        expect(body).toEqual({ commandId: "cmd-1", ...sample.params, applied: route.kind });
        expect(response.headers["keyload-commit-index"]).toBe("10");
      } else if (route.type === "cluster") {
        expect(fx.service.submitted).toHaveLength(0);
        expect(fx.service.clusterChanges).toHaveLength(1);
        expect(fx.service.clusterChanges[0]).toMatchObject({
          kind: route.kind,
          params: sample.params,
          body: sample.body,
          identity: KEYS[who].identity,
          roles: route.roles,
        });
        expect(body).toEqual({ kind: route.kind, ...sample.params });
      } else {
        expect(fx.service.reads).toHaveLength(1);
        expect(fx.service.reads[0]).toMatchObject({
          kind: route.kind,
          params: sample.params,
          body: sample.body,
          query: sample.query ?? {},
          identity: KEYS[who].identity,
          roles: route.roles,
        });
        expect(body).toEqual({ kind: route.kind, ...sample.params });
      }
    },
  );
});

describe("what the voter receives", () => {
  it("gets a signal made only when read: a getter on the submission's prototype, for writes and reads", async () => {
    // An own getter (an object literal's) or an AbortSignal made for every request survives the young
    // generation's collections (Node 20; the getter on 24 too) and takes the whole request with it.
    await fx.putAsWriter('{"value":1}');
    await fx.app.inject({
      method: "GET",
      url: "/v1/catalog/k1",
      headers: { authorization: bearer("reader") },
    });
    const submitted = [fx.service.submitted[0]!, fx.service.reads[0]!];
    for (const submission of submitted) {
      expect(Object.getOwnPropertyDescriptor(submission, "signal")).toBeUndefined();
      expect(submission.signal).toBe(submission.signal);
      expect(submission.signal.aborted).toBe(false);
    }
  });

  it("gets the body exactly as received as the payload, with its sizes", async () => {
    const text = '{ "value" :\t[1, 2.50, "\\u00e9", "é😀"] ,"expectedVersion":0 }\n';
    await fx.putAsWriter(text);
    const payload = fx.service.submitted[0]!.payload;
    expect(Buffer.from(payload.bytes).equals(Buffer.from(text))).toBe(true);
    expect(payload.text()).toBe(text);
    expect([payload.utf16Length, payload.utf8Length]).toEqual([text.length, Buffer.byteLength(text)]);
  });

  it("accepts application/json with a charset parameter", async () => {
    const response = await fx.app.inject({
      method: "PUT",
      url: "/v1/catalog/k",
      headers: {
        authorization: bearer("writer"),
        "keyload-command-id": "c1",
        "content-type": "application/json; charset=utf-8",
      },
      payload: '{"value":1}',
    });
    expect(response.statusCode).toBe(200);
  });

  it("treats an empty body of an optional-body route as no body", async () => {
    const response = await fx.app.inject({
      method: "DELETE",
      url: "/v1/catalog/k",
      headers: {
        authorization: bearer("writer"),
        "keyload-command-id": "c1",
        "content-type": "application/json",
      },
      payload: "",
    });
    expect(response.statusCode).toBe(200);
    expect(fx.service.submitted[0]?.payload.utf8Length).toBe(0);
  });

  it("passes an optional body when one is sent", async () => {
    await fx.app.inject({
      method: "DELETE",
      url: "/v1/catalog/k",
      headers: {
        authorization: bearer("writer"),
        "keyload-command-id": "c1",
        "content-type": "application/json",
      },
      payload: '{"expectedVersion":3}',
    });
    expect(fx.service.submitted[0]?.payload.text()).toBe('{"expectedVersion":3}');
  });

  it("percent-decodes keys, reserved characters included", async () => {
    const key = "a/b?c#d%e f+g";
    await fx.app.inject({
      method: "GET",
      url: `/v1/catalog/${encodeURIComponent(key)}`,
      headers: { authorization: bearer("reader") },
    });
    expect(fx.service.reads[0]?.params).toEqual({ key });
  });

  it("accepts a key of 512 characters, astral ones included", async () => {
    const key = "😀".repeat(512);
    const response = await fx.app.inject({
      method: "GET",
      url: `/v1/catalog/${encodeURIComponent(key)}`,
      headers: { authorization: bearer("reader") },
    });
    expect(response.statusCode).toBe(200);
    expect(fx.service.reads[0]?.params).toEqual({ key });
  });

  it("ignores tenant, principal and role claims in a body: the identity comes from the key", async () => {
    const text = JSON.stringify({
      value: 1,
      tenantId: "system",
      tenant: "t2",
      principalId: "admin",
      roles: ["admin"],
    });
    const response = await fx.putAsWriter(text);
    expect(response.statusCode).toBe(200);
    expect(fx.service.submitted[0]?.identity).toEqual(KEYS.writer.identity);
    // A reader stays a reader whatever its body claims.
    const denied = await fx.app.inject({
      method: "PUT",
      url: "/v1/catalog/k",
      headers: {
        authorization: bearer("reader"),
        "keyload-command-id": "c2",
        "content-type": "application/json",
      },
      payload: text,
    });
    expect(denied.statusCode).toBe(403);
    expect(fx.service.submitted).toHaveLength(1);
  });

  it("ignores tenant claims in headers and query strings alike", async () => {
    await fx.app.inject({
      method: "GET",
      url: "/v1/dispatch/ops?after=1&tenantId=t2",
      headers: { authorization: bearer("reader"), "x-tenant-id": "t2" },
    });
    expect(fx.service.reads[0]).toMatchObject({ identity: KEYS.reader.identity, query: { after: "1" } });
  });

  it("answers a non-object write result under `result`", async () => {
    fx.service.onSubmit = async (command) => ({ commandId: command.commandId, index: 3, result: [1, 2] });
    const response = await fx.putAsWriter('{"value":1}');
    expect(response.json()).toEqual({ commandId: "c1", result: [1, 2] });
  });

  it("answers a read's string value as JSON, not text", async () => {
    fx.service.onRead = async () => "plain";
    const response = await fx.app.inject({
      method: "GET",
      url: "/v1/membership",
      headers: { authorization: bearer("reader") },
    });
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(response.body).toBe('"plain"');
  });

  it("lets reader, writer and admin read; only admin see admission status", async () => {
    for (const who of ["reader", "writer", "admin"] as const) {
      const response = await fx.app.inject({
        method: "GET",
        url: "/v1/catalog/k",
        headers: { authorization: bearer(who) },
      });
      expect(response.statusCode).toBe(200);
    }
    for (const who of ["reader", "writer"] as const) {
      const response = await fx.app.inject({
        method: "GET",
        url: "/v1/admin/admission",
        headers: { authorization: bearer(who) },
      });
      expect(response.statusCode).toBe(403);
    }
  });
});
