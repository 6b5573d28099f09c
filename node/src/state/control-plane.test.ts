import { type Member, READ_LIMITS } from "@keyload/contract";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey } from "./api-key.js";
import { ADMIN_KEY, Harness, TEST_KEY_HASHER, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s"));
});
afterEach(() => temp.cleanup());

describe("membership", () => {
  const put = (memberId: string, body: unknown) => h.run("membership.put", body, { params: { memberId } });
  const write = (memberId: string, body: unknown) =>
    h.ok<Member & { tableVersion: number }>("membership.put", body, { params: { memberId } });

  it("inserts without an etag, updates with the current one, and versions the table", () => {
    const inserted = write("silo-1", { status: "joining", address: "10.0.0.1:11111" });
    expect(inserted).toMatchObject({
      memberId: "silo-1",
      status: "joining",
      tableVersion: 1,
      iAmAliveMs: h.log.nowMs,
    });
    expect(inserted.etag).toMatch(/^[0-9a-f]{16}$/);
    expect(
      h.fail("membership.put", { status: "active", address: "a" }, { params: { memberId: "silo-1" } }),
    ).toMatchObject({
      code: "FailedPrecondition",
      reason: "EtagMismatch",
    });
    expect(
      h.fail(
        "membership.put",
        { status: "active", address: "a", etag: "stale" },
        { params: { memberId: "silo-1" } },
      ),
    ).toMatchObject({
      reason: "EtagMismatch",
    });
    expect(
      h.fail(
        "membership.put",
        { status: "active", address: "a", etag: "x" },
        { params: { memberId: "silo-9" } },
      ),
    ).toMatchObject({
      reason: "EtagMismatch",
    });
    const updated = write("silo-1", {
      status: "active",
      address: "10.0.0.1:11111",
      etag: inserted.etag,
      tableVersion: 1,
    });
    expect(updated).toMatchObject({ status: "active", tableVersion: 2 });
    expect(updated.etag).not.toBe(inserted.etag);
    expect(
      h.fail(
        "membership.put",
        { status: "dead", address: "x", etag: updated.etag, tableVersion: 1 },
        { params: { memberId: "silo-1" } },
      ),
    ).toMatchObject({
      reason: "TableVersionMismatch",
    });
    write("silo-0", { status: "joining", address: "10.0.0.2:11111", tableVersion: 2 });
    expect(h.sm.membership("t1")).toEqual({
      tableVersion: 3,
      members: [
        expect.objectContaining({ memberId: "silo-0" }),
        expect.objectContaining({ memberId: "silo-1", status: "active" }),
      ],
    });
    expect(h.sm.membership("t2")).toEqual({ tableVersion: 0, members: [] });
  });

  it("refreshes I-am-alive alone, without an etag or a new table version", () => {
    const row = write("silo-1", { status: "active", address: "a:1" });
    h.advance(5_000);
    const alive = write("silo-1", { iAmAlive: true });
    expect(alive).toEqual({ ...row, iAmAliveMs: h.log.nowMs, tableVersion: 1 });
    expect(h.fail("membership.put", { iAmAlive: true }, { params: { memberId: "ghost" } })).toMatchObject({
      code: "NotFound",
    });
  });

  it("refuses bad rows", () => {
    for (const body of [
      {},
      { status: "zombie", address: "a" },
      { status: "active" },
      { status: "active", address: "" },
      { status: "active", address: "a", tableVersion: -1 },
      "x",
    ]) {
      expect(put("m", body)).toMatchObject({
        outcome: { status: "failed", error: { code: "InvalidArgument" } },
      });
    }
  });
});

describe("dispatch", () => {
  it("appends directives with per-channel sequence numbers, readable after N", () => {
    for (const directive of ["drain", "rebalance", "resume"]) {
      h.ok("dispatch.append", { directive, data: { n: directive.length } }, { params: { channel: "ops" } });
    }
    expect(h.ok("dispatch.append", { directive: "other" }, { params: { channel: "control" } })).toEqual({
      channel: "control",
      sequence: 1,
    });
    expect(h.ok("dispatch.append", { directive: "x" }, { params: { channel: "ops" }, tenant: "t2" })).toEqual(
      { channel: "ops", sequence: 1 },
    );
    expect(h.sm.readDispatch("t1", "ops", 1)).toEqual([
      { sequence: 2, directive: "rebalance", data: { n: 9 }, atMs: expect.any(Number) },
      { sequence: 3, directive: "resume", data: { n: 6 }, atMs: expect.any(Number) },
    ]);
    expect(h.sm.readDispatch("t1", "ops", 0, 1).map((d) => d.sequence)).toEqual([1]);
    expect(h.sm.readDispatch("t1", "control", 0)[0]).toMatchObject({ data: null });
    expect(h.sm.readDispatch("t1", "ops", 3)).toEqual([]);
    expect(() => h.sm.readDispatch("t1", "ops", -1)).toThrow(
      expect.objectContaining({ code: "InvalidArgument" }),
    );
    // A page stops past a byte bound of stored data, the first directive always answered.
    const big = "x".repeat(READ_LIMITS.maxDispatchPageBytes / 2 - 1024);
    for (let i = 0; i < 3; i++)
      h.ok("dispatch.append", { directive: "big", data: big }, { params: { channel: "big" } });
    expect(h.sm.readDispatch("t1", "big", 0).map((d) => d.sequence)).toEqual([1, 2]);
    expect(h.sm.readDispatch("t1", "big", 2).map((d) => d.sequence)).toEqual([3]);
    for (const body of [{}, { directive: "" }, { directive: 5 }, { directive: "x".repeat(257) }, "["]) {
      expect(h.fail("dispatch.append", body, { params: { channel: "ops" } })).toMatchObject({
        code: "InvalidArgument",
      });
    }
  });
});

describe("principal catalog", () => {
  const asAdmin = { tenant: "system", principal: "admin" };
  beforeEach(() => {
    h.bootstrapAdmin();
  });

  it("creates the bootstrap admin from the replicated key hash and authenticates by hash only", () => {
    expect(h.sm.authenticate(hashApiKey(ADMIN_KEY))).toEqual({
      keyId: "bootstrap",
      principalId: "admin",
      tenantId: "system",
      roles: ["admin"],
    });
    expect(h.sm.authenticate(hashApiKey("wrong"))).toBeUndefined();
    expect(h.sm.dump()).not.toContain(ADMIN_KEY);
  });

  it("keys the plain SHA-256 a command proposed before keys were keyed carries, as it applies", () => {
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, asAdmin);
    const apiKey = generateApiKey();
    const { keyId } = h.ok<{ keyId: string }>("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey(apiKey),
      unkeyed: true,
    });
    expect(h.sm.authenticate(TEST_KEY_HASHER.hash(apiKey))).toMatchObject({ keyId, principalId: "svc" });
    expect(h.sm.authenticate(hashApiKey(apiKey))).toBeUndefined();
    expect(h.sm.dump()).not.toContain(hashApiKey(apiKey));
  });

  it("creates principals and keys, whose plain text never reaches the state", () => {
    expect(
      h.ok(
        "admin.putPrincipal",
        { principalId: "svc", tenantId: "t1", roles: ["reader", "writer", "reader"] },
        asAdmin,
      ),
    ).toEqual({
      principalId: "svc",
      tenantId: "t1",
      roles: ["writer", "reader"],
      created: true,
    });
    const apiKey = generateApiKey();
    const created = h.ok<{ keyId: string }>("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey(apiKey),
    });
    expect(created).toEqual({ principalId: "svc", keyId: expect.stringMatching(/^k[0-9a-f]{23}$/) });
    expect(h.sm.authenticate(hashApiKey(apiKey))).toEqual({
      keyId: created.keyId,
      principalId: "svc",
      tenantId: "t1",
      roles: ["writer", "reader"],
    });
    expect(h.sm.dump()).not.toContain(apiKey);
    // A retry generates another key, but is the same command: the first outcome, no second key.
    const retry = h.run("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey("other"),
      commandId: "ck",
    });
    const again = h.run("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey("third"),
      commandId: "ck",
    });
    expect(again).toMatchObject({ duplicate: true, outcome: { index: retry.entryIndex } });
    expect(h.sm.authenticate(hashApiKey("third"))).toBeUndefined();
    expect(
      h.ok("admin.deleteKey", "", { ...asAdmin, params: { principalId: "svc", keyId: created.keyId } }),
    ).toEqual({
      principalId: "svc",
      keyId: created.keyId,
    });
    expect(h.sm.authenticate(hashApiKey(apiKey))).toBeUndefined();
    expect(
      h.fail("admin.deleteKey", "", { ...asAdmin, params: { principalId: "svc", keyId: created.keyId } }),
    ).toMatchObject({
      code: "NotFound",
      reason: "KeyNotFound",
    });
  });

  it("stops accepting a verified key as soon as its revoke or a role change is applied", async () => {
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["writer"] }, asAdmin);
    const apiKey = generateApiKey();
    const { keyId } = h.ok<{ keyId: string }>("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey(apiKey),
    });
    // Verified twice, so the second answer may come from what the first one verified.
    expect(h.sm.authenticate(hashApiKey(apiKey))?.roles).toEqual(["writer"]);
    expect(h.sm.authenticate(hashApiKey(apiKey))?.roles).toEqual(["writer"]);
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, asAdmin);
    expect(h.sm.authenticate(hashApiKey(apiKey))?.roles).toEqual(["reader"]);
    // A revoke that refuses (the key is not that principal's) changes nothing.
    expect(
      h.fail("admin.deleteKey", "", { ...asAdmin, params: { principalId: "admin", keyId } }),
    ).toMatchObject({ reason: "KeyNotFound" });
    expect(h.sm.authenticate(hashApiKey(apiKey))?.principalId).toBe("svc");
    // A snapshot taken while the key was valid, installed after the revoke, brings it back: the state
    // as of the snapshot, not what was verified since.
    await h.sm.createSnapshot(temp.path("with-key.db"));
    h.ok("admin.deleteKey", "", { ...asAdmin, params: { principalId: "svc", keyId } });
    expect(h.sm.authenticate(hashApiKey(apiKey))).toBeUndefined();
    h.sm.restoreFromSnapshot(temp.path("with-key.db"));
    expect(h.sm.authenticate(hashApiKey(apiKey))?.principalId).toBe("svc");
  });

  it("authorizes admin commands against the catalog at apply time", () => {
    expect(
      h.fail("admin.putPrincipal", { principalId: "x", tenantId: "t1", roles: ["admin"] }),
    ).toMatchObject({ code: "PermissionDenied", reason: "MissingRole" });
    h.ok("admin.putPrincipal", { principalId: "t1-admin", tenantId: "t1", roles: ["admin"] }, asAdmin);
    const tenantAdmin = { tenant: "t1", principal: "t1-admin" };
    h.ok("admin.putPrincipal", { principalId: "t1-user", tenantId: "t1", roles: ["reader"] }, tenantAdmin);
    expect(
      h.fail(
        "admin.putPrincipal",
        { principalId: "t2-user", tenantId: "t2", roles: ["reader"] },
        tenantAdmin,
      ),
    ).toMatchObject({
      reason: "OtherTenant",
    });
    // Another tenant's principal is, to a tenant's admin, one that does not exist: 404 as for an ID no
    // one has, so its existence does not show.
    for (const principalId of ["admin", "no-one"]) {
      expect(
        h.fail("admin.createKey", "", {
          ...tenantAdmin,
          params: { principalId },
          keyHash: hashApiKey("k"),
        }),
      ).toMatchObject({ code: "NotFound", reason: "PrincipalNotFound" });
      expect(
        h.fail("admin.deleteKey", "", { ...tenantAdmin, params: { principalId, keyId: "bootstrap" } }),
      ).toMatchObject({ code: "NotFound", reason: "PrincipalNotFound" });
    }
    // Same principal ID, claimed from another tenant's scope: not an admin there.
    expect(
      h.fail(
        "admin.putPrincipal",
        { principalId: "y", tenantId: "t2", roles: ["reader"] },
        { tenant: "t2", principal: "t1-admin" },
      ),
    ).toMatchObject({
      reason: "MissingRole",
    });
    // Revoked by an earlier entry, the role no longer acts.
    h.ok("admin.putPrincipal", { principalId: "t1-admin", tenantId: "t1", roles: ["reader"] }, asAdmin);
    expect(
      h.fail("admin.putPrincipal", { principalId: "z", tenantId: "t1", roles: ["reader"] }, tenantAdmin),
    ).toMatchObject({ reason: "MissingRole" });
  });

  /** Principal `svc` of t1 with `roles` and one key; returns what a request by that key carries. */
  const keyed = (roles: string[]) => {
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles }, asAdmin);
    const { keyId } = h.ok<{ keyId: string }>("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey(generateApiKey()),
    });
    return { tenant: "t1", principal: "svc", keyId };
  };

  it("refuses a command whose key an earlier entry revoked, keeping that outcome under its ID", () => {
    const svc = keyed(["writer"]);
    h.ok("catalog.put", { value: 1 }, { ...svc, params: { key: "k" }, commandId: "before" });
    h.ok("admin.deleteKey", "", { ...asAdmin, params: { principalId: "svc", keyId: svc.keyId } });
    // Sent through a voter that had not applied the revoke yet: the entry still names the key.
    const after = h.run("catalog.put", { value: 2 }, { ...svc, params: { key: "k" }, commandId: "after" });
    expect(after).toMatchObject({
      duplicate: false,
      outcome: {
        status: "failed",
        error: { code: "Unauthenticated", reason: "InvalidCredentials" },
      },
    });
    expect(h.sm.getDocument("t1", "k")?.value).toBe(1);
    // Stored like any refusal at apply: a retry under the same ID, by another key that may send it,
    // answers the same outcome without applying.
    const other = h.ok<{ keyId: string }>("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "svc" },
      keyHash: hashApiKey(generateApiKey()),
    });
    const retry = h.run(
      "catalog.put",
      { value: 2 },
      { ...svc, keyId: other.keyId, params: { key: "k" }, commandId: "after" },
    );
    expect(retry).toMatchObject({ duplicate: true, outcome: { index: after.entryIndex, status: "failed" } });
    expect(h.sm.commandOutcome("t1", "after")).toMatchObject({
      status: "failed",
      error: { code: "Unauthenticated" },
    });
    // The revoked key learns nothing of an ID's outcome, which stays as it was.
    const replay = h.run("catalog.put", { value: 1 }, { ...svc, params: { key: "k" }, commandId: "before" });
    expect(replay).toMatchObject({
      tenant: "t1",
      commandId: "before",
      duplicate: false,
      outcome: { status: "failed", error: { code: "Unauthenticated" } },
    });
    expect(h.sm.commandOutcome("t1", "before")).toMatchObject({ status: "committed" });
    // A key is its own principal's only.
    const claimed = { tenant: "system", principal: "admin", keyId: other.keyId };
    expect(h.fail("catalog.put", { value: 3 }, { ...claimed, params: { key: "k" } })).toMatchObject({
      code: "Unauthenticated",
      reason: "InvalidCredentials",
    });
    expect(
      h.fail("catalog.put", { value: 3 }, { ...svc, keyId: "k-unknown", params: { key: "k" } }),
    ).toMatchObject({
      reason: "InvalidCredentials",
    });
  });

  it("refuses a command whose principal lost the role it needs, admin commands included", () => {
    const svc = keyed(["writer", "admin"]);
    h.ok("catalog.put", { value: 1 }, { ...svc, params: { key: "k" } });
    h.ok("admin.putPrincipal", { principalId: "svc2", tenantId: "t1", roles: ["reader"] }, svc);
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, asAdmin);
    for (const [kind, payload, params] of [
      ["catalog.put", { value: 2 }, { key: "k" }],
      ["queue.enqueue", { body: 1 }, { queue: "jobs" }],
      ["admin.putPrincipal", { principalId: "svc3", tenantId: "t1", roles: ["reader"] }, {}],
    ] as const) {
      expect(h.fail(kind, payload, { ...svc, params })).toMatchObject({
        code: "PermissionDenied",
        reason: "MissingRole",
      });
    }
    expect(h.sm.getDocument("t1", "k")?.value).toBe(1);
    // The role given back counts from the entry that gives it.
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["writer"] }, asAdmin);
    h.ok("catalog.put", { value: 2 }, { ...svc, params: { key: "k" } });
  });

  it("lets the bootstrap admin key send every kind of command", () => {
    const bootstrap = { ...asAdmin, keyId: "bootstrap" };
    h.ok("catalog.put", { value: 1 }, { ...bootstrap, params: { key: "k" } });
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, bootstrap);
    expect(h.sm.getDocument("system", "k")?.value).toBe(1);
  });

  it("re-authorizes a read's caller against the catalog as applied", () => {
    const svc = keyed(["writer"]);
    const caller = { keyId: svc.keyId, principalId: "svc", tenantId: "t1" };
    expect(h.sm.authorizationRefusal(caller, ["reader", "writer"], "catalog.get")).toBeUndefined();
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, asAdmin);
    expect(h.sm.authorizationRefusal(caller, ["writer"], "catalog.get")).toMatchObject({
      code: "PermissionDenied",
      reason: "MissingRole",
    });
    expect(
      h.sm.authorizationRefusal({ ...caller, principalId: "admin" }, ["reader"], "catalog.get"),
    ).toMatchObject({ code: "Unauthenticated", reason: "InvalidCredentials" });
    h.ok("admin.deleteKey", "", { ...asAdmin, params: { principalId: "svc", keyId: svc.keyId } });
    expect(h.sm.authorizationRefusal(caller, ["reader"], "catalog.get")).toMatchObject({
      code: "Unauthenticated",
      reason: "InvalidCredentials",
    });
  });

  it("keeps principals in one tenant and never removes the last system admin key", () => {
    h.ok("admin.putPrincipal", { principalId: "svc", tenantId: "t1", roles: ["reader"] }, asAdmin);
    expect(
      h.fail("admin.putPrincipal", { principalId: "svc", tenantId: "t2", roles: ["reader"] }, asAdmin),
    ).toMatchObject({
      code: "FailedPrecondition",
      reason: "PrincipalInOtherTenant",
    });
    expect(
      h.fail("admin.deleteKey", "", { ...asAdmin, params: { principalId: "admin", keyId: "bootstrap" } }),
    ).toMatchObject({
      reason: "LastSystemAdmin",
    });
    expect(
      h.fail("admin.putPrincipal", { principalId: "admin", tenantId: "system", roles: ["reader"] }, asAdmin),
    ).toMatchObject({
      reason: "LastSystemAdmin",
    });
    h.ok("admin.createKey", "", {
      ...asAdmin,
      params: { principalId: "admin" },
      keyHash: hashApiKey("second"),
    });
    h.ok("admin.deleteKey", "", { ...asAdmin, params: { principalId: "admin", keyId: "bootstrap" } });
    expect(h.sm.authenticate(hashApiKey(ADMIN_KEY))).toBeUndefined();
    expect(h.sm.authenticate(hashApiKey("second"))?.principalId).toBe("admin");
    expect(
      h.fail("admin.createKey", "", {
        ...asAdmin,
        params: { principalId: "ghost" },
        keyHash: hashApiKey("g"),
      }),
    ).toMatchObject({
      code: "NotFound",
      reason: "PrincipalNotFound",
    });
    expect(
      h.fail("admin.createKey", "", {
        ...asAdmin,
        params: { principalId: "svc" },
        keyHash: hashApiKey("second"),
      }),
    ).toMatchObject({
      reason: "KeyHashTaken",
    });
  });

  it("refuses malformed principal writes", () => {
    for (const body of [
      {},
      { principalId: "x", tenantId: "t1" },
      { principalId: "x", tenantId: "t1", roles: [] },
      { principalId: "x", tenantId: "t1", roles: ["root"] },
      { principalId: "bad id", tenantId: "t1", roles: ["reader"] },
      { principalId: "x", tenantId: "", roles: ["reader"] },
    ]) {
      expect(h.fail("admin.putPrincipal", body, asAdmin)).toMatchObject({ code: "InvalidArgument" });
    }
  });
});
