import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, VoterCluster } from "./test-fixtures/voter-cluster.js";

vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

let cluster: VoterCluster;
let url: string;
/** API keys of alice (tenant t1) and bob (tenant t2), both writer and reader. */
const keys: { alice: string; bob: string } = { alice: "", bob: "" };

beforeAll(async () => {
  cluster = await VoterCluster.start();
  const leader = await cluster.waitForLeader();
  // A follower: every write below is forwarded, with the scope the follower verified.
  url = cluster.voter((leader + 1) % 3).httpUrl;
  for (const [name, tenantId] of [
    ["alice", "t1"],
    ["bob", "t2"],
  ] as const) {
    const created = await call(url, "POST", "/v1/admin/principals", {
      body: { principalId: name, tenantId, roles: ["writer", "reader"] },
      commandId: `principal-${name}`,
    });
    expect(created.status).toBe(201);
    const key = await call(url, "POST", `/v1/admin/principals/${name}/keys`, { commandId: `key-${name}` });
    expect(key.status).toBe(201);
    keys[name] = String(key.body.apiKey);
  }
});

afterAll(async () => {
  await cluster?.dispose();
});

describe("tenants on a real cluster", () => {
  it("never see each other's documents, commands, queues or directives", async () => {
    const as = (who: "alice" | "bob") => ({ key: keys[who] });
    const put = await call(url, "PUT", "/v1/catalog/doc", {
      ...as("alice"),
      body: { value: "alice's" },
      commandId: "same-id",
    });
    expect(put).toMatchObject({ status: 200, body: { version: 1 } });
    expect((await call(url, "GET", "/v1/catalog/doc", as("bob"))).status).toBe(404);
    const bulk = await call(url, "POST", "/v1/catalog/bulk-get", { ...as("bob"), body: { keys: ["doc"] } });
    expect(bulk.body).toEqual({ items: [{ key: "doc", found: false }] });
    expect((await call(url, "GET", "/v1/commands/same-id", as("bob"))).status).toBe(404);
    expect((await call(url, "GET", "/v1/commands/same-id", as("alice"))).status).toBe(200);
    // Command IDs are scoped per tenant: bob's same ID with another body is his own command.
    const bobs = await call(url, "PUT", "/v1/catalog/doc", {
      ...as("bob"),
      body: { value: "bob's" },
      commandId: "same-id",
    });
    expect(bobs).toMatchObject({ status: 200, body: { version: 1 } });
    expect((await call(url, "GET", "/v1/catalog/doc", as("alice"))).body).toMatchObject({ value: "alice's" });

    const enqueued = await call(url, "POST", "/v1/queues/q/messages", {
      ...as("alice"),
      body: { body: { n: 1 } },
      commandId: "enqueue-1",
    });
    expect(enqueued.status).toBe(201);
    const bobLease = await call(url, "POST", "/v1/queues/q/leases", {
      ...as("bob"),
      body: {},
      commandId: "lease-1",
    });
    expect(bobLease.body).toMatchObject({ messages: [] });
    const appended = await call(url, "POST", "/v1/dispatch/ops", {
      ...as("alice"),
      body: { directive: "go" },
      commandId: "dispatch-1",
    });
    expect(appended.status).toBe(200);
    expect((await call(url, "GET", "/v1/dispatch/ops?after=0", as("bob"))).body).toMatchObject({
      directives: [],
    });
    const aliceLease = await call(url, "POST", "/v1/queues/q/leases", {
      ...as("alice"),
      body: {},
      commandId: "lease-1",
    });
    expect(aliceLease.body).toMatchObject({ messages: [{ body: { n: 1 } }] });
  });

  it("keep their queries, searches, graphs and membership tables apart", async () => {
    const alice = { key: keys.alice };
    const bob = { key: keys.bob };
    const doc = await call(url, "PUT", "/v1/catalog/note", {
      ...alice,
      body: { value: { text: "quarterly aardvark report" } },
      commandId: "note-1",
    });
    expect(doc.status).toBe(200);
    const edge = await call(url, "PUT", "/v1/graph/edges", {
      ...alice,
      body: { from: "a", type: "knows", to: "b" },
      commandId: "edge-1",
    });
    expect(edge.status).toBe(200);
    const member = await call(url, "PUT", "/v1/membership/m1", {
      ...alice,
      body: { status: "active", address: "10.0.0.1:80" },
      commandId: "member-1",
    });
    expect(member.status).toBe(200);

    const query = (who: { key: string }) =>
      call(url, "POST", "/v1/query", { ...who, body: { prefix: "note" } });
    expect((await query(alice)).body).toMatchObject({ items: [{ key: "note" }] });
    expect((await query(bob)).body).toMatchObject({ items: [] });
    const search = (who: { key: string }) =>
      call(url, "POST", "/v1/search", { ...who, body: { query: "aardvark" } });
    expect((await search(alice)).body).toMatchObject({ hits: [{ key: "note" }] });
    expect((await search(bob)).body).toMatchObject({ hits: [] });
    const traverse = (who: { key: string }) =>
      call(url, "POST", "/v1/graph/traverse", { ...who, body: { start: "a" } });
    expect((await traverse(alice)).body).toMatchObject({ nodes: [{ id: "a" }, { id: "b" }] });
    expect((await traverse(bob)).body).toMatchObject({ nodes: [{ id: "a" }] });
    expect((await call(url, "GET", "/v1/membership", alice)).body).toMatchObject({ members: [{}] });
    expect((await call(url, "GET", "/v1/membership", bob)).body).toMatchObject({ members: [] });
  });

  it("ignores tenant, principal and role claims in a body", async () => {
    const claims = {
      tenantId: "t1",
      tenant: "t1",
      principalId: "alice",
      principal: "alice",
      roles: ["admin"],
    };
    const written = await call(url, "PUT", "/v1/catalog/claimed", {
      key: keys.bob,
      body: { value: "bob's", ...claims },
      commandId: "claims-1",
    });
    expect(written.status).toBe(200);
    // The write landed in bob's tenant, not the claimed one.
    expect((await call(url, "GET", "/v1/catalog/claimed", { key: keys.alice })).status).toBe(404);
    expect((await call(url, "GET", "/v1/catalog/claimed", { key: keys.bob })).body).toMatchObject({
      value: "bob's",
    });
    const promoted = await call(url, "POST", "/v1/admin/principals", {
      key: keys.bob,
      // The principal to create, plus claims that the caller itself is the system admin.
      body: { principalId: "mallory", tenantId: "system", roles: ["admin"], tenant: "system", role: "admin" },
      commandId: "claims-2",
    });
    expect(promoted).toMatchObject({ status: 403, body: { error: { code: "PermissionDenied" } } });
    const status = await call(url, "GET", "/v1/admin/admission", { key: keys.bob });
    expect(status.status).toBe(403);
  });
});
