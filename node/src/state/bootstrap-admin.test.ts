import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COMMAND_KINDS } from "../requests/command-kinds.js";
import { hashApiKey } from "./api-key.js";
import { BOOTSTRAP_ADMIN_COMMAND_ID } from "./bootstrap-admin-command.js";
import { decodeCommand } from "./command-envelope.js";
import { committed, Harness, LogBuilder, TempStates } from "./test-fixtures/state-fixtures.js";

const FIRST = hashApiKey("first-voter-admin-key");
const SECOND = hashApiKey("second-voter-admin-key");
const THIRD = hashApiKey("third-voter-admin-key");
const SYSTEM = { tenant: "system", principal: "system" };

let temp: TempStates;
beforeEach(() => {
  temp = new TempStates();
});
afterEach(() => temp.cleanup());

describe("the bootstrap admin", () => {
  it("is unknown in a new state until its command applies", () => {
    const h = new Harness(temp.create("s"));
    expect(h.sm.hasBootstrapAdmin()).toBe(false);
    expect(h.sm.authenticate(FIRST)).toBeUndefined();
    expect(h.sm.dump()).not.toContain('"admin"');
    expect(committed(h.bootstrapAdmin(FIRST))).toEqual({
      principalId: "admin",
      tenantId: "system",
      created: true,
    });
    expect(h.sm.hasBootstrapAdmin()).toBe(true);
    expect(h.sm.authenticate(FIRST)).toEqual({
      keyId: "bootstrap",
      principalId: "admin",
      tenantId: "system",
      roles: ["admin"],
    });
  });

  it("is the first one committed: later proposals with other keys leave byte-identical states", () => {
    // Three voters, each proposing its own configured key after the first committed one.
    const logs = [SECOND, THIRD].map((later) => {
      const log = new LogBuilder();
      log.bootstrapAdmin(FIRST);
      log.noop();
      log.bootstrapAdmin(later);
      // Proposed under another command ID (a tool's entry, or after the first outcome expired).
      log.command("system.bootstrapAdmin", "", { ...SYSTEM, keyHash: later, commandId: "again" });
      return log.entries;
    });
    const states = logs.map((entries, i) => {
      const sm = temp.create(`voter${i}`);
      const results = sm.applyBatch(entries);
      expect(committed(results[0]!)).toMatchObject({ created: true });
      // Same command ID, another key: the same command again (the hash is outside the digest).
      expect(results[2]).toMatchObject({ type: "command", duplicate: true, outcome: { index: 1 } });
      expect(committed(results[3]!)).toEqual({ principalId: "admin", tenantId: "system", created: false });
      return sm;
    });
    expect(states[0]!.dump()).toBe(states[1]!.dump());
    for (const sm of states) {
      expect(sm.authenticate(FIRST)).toMatchObject({ principalId: "admin", tenantId: "system" });
      expect(sm.authenticate(SECOND)).toBeUndefined();
      expect(sm.authenticate(THIRD)).toBeUndefined();
    }
    // The key's hash is state, but not the outcome any caller reads back.
    expect(states[0]!.commandOutcome("system", BOOTSTRAP_ADMIN_COMMAND_ID)).toMatchObject({
      status: "committed",
      result: { principalId: "admin", tenantId: "system", created: true },
    });
  });

  it("is refused from any submitter but the system, before and after it exists", () => {
    const h = new Harness(temp.create("s"));
    const claims = [
      { tenant: "system", principal: "admin", keyId: "bootstrap" },
      { tenant: "system", principal: "system", keyId: "bootstrap" },
      { tenant: "system", principal: "admin" },
      { tenant: "t1", principal: "system" },
      { tenant: "t1", principal: "p1" },
    ];
    for (const claim of claims) {
      expect(h.fail("system.bootstrapAdmin", "", { ...claim, keyHash: SECOND })).toMatchObject({
        code: "PermissionDenied",
        reason: "SystemCommand",
      });
      expect(h.sm.hasBootstrapAdmin()).toBe(false);
    }
    committed(h.bootstrapAdmin(FIRST));
    for (const claim of claims) {
      expect(
        h.fail("system.bootstrapAdmin", "", { ...claim, keyHash: SECOND, commandId: "c" }),
      ).toMatchObject({
        code: "PermissionDenied",
        reason: "SystemCommand",
      });
    }
    expect(h.sm.authenticate(SECOND)).toBeUndefined();
    expect(h.sm.authenticate(FIRST)).toMatchObject({ keyId: "bootstrap" });
  });

  it("refuses a key hash that is not a lowercase hex SHA-256, and a body", () => {
    const h = new Harness(temp.create("s"));
    for (const keyHash of ["plain-admin-key", FIRST.toUpperCase()]) {
      expect(h.fail("system.bootstrapAdmin", "", { ...SYSTEM, keyHash })).toMatchObject({
        code: "InvalidArgument",
        reason: "MalformedEnvelope",
      });
    }
    expect(h.fail("system.bootstrapAdmin", "", SYSTEM)).toMatchObject({ reason: "MalformedEnvelope" });
    expect(h.fail("system.bootstrapAdmin", "[1]", { ...SYSTEM, keyHash: FIRST })).toMatchObject({
      code: "InvalidArgument",
    });
    expect(h.sm.hasBootstrapAdmin()).toBe(false);
  });

  it("keeps the admin a state created by an earlier version seeded at creation", async () => {
    const path = temp.path("seeded.db");
    const created = temp.create("seeded");
    await created.close();
    // What openDatabase wrote into every new database before the admin was replicated.
    const db = new Database(path);
    db.prepare("INSERT INTO tenants (tenant, created_index) VALUES ('system', 0)").run();
    db.prepare(
      `INSERT INTO principals (principal_id, tenant, roles, updated_index) VALUES ('admin', 'system', '["admin"]', 0)`,
    ).run();
    db.prepare(
      "INSERT INTO api_keys (key_id, principal_id, key_hash, created_index) VALUES ('bootstrap', 'admin', ?, 0)",
    ).run(FIRST);
    db.close();

    const h = new Harness(temp.create("seeded"));
    expect(h.sm.hasBootstrapAdmin()).toBe(true);
    const before = h.sm
      .dump()
      .replace(/# command_outcomes[^#]*/, "")
      .replace(/# meta[^#]*/, "");
    expect(committed(h.bootstrapAdmin(SECOND))).toMatchObject({ created: false });
    expect(
      h.sm
        .dump()
        .replace(/# command_outcomes[^#]*/, "")
        .replace(/# meta[^#]*/, ""),
    ).toBe(before);
    expect(h.sm.authenticate(FIRST)).toMatchObject({ keyId: "bootstrap" });
    expect(h.sm.authenticate(SECOND)).toBeUndefined();
  });

  it("is a system kind no route names, carrying the key's hash and never the key", () => {
    expect(Object.keys(COMMAND_KINDS)).not.toContain("system.bootstrapAdmin");
    const entry = new LogBuilder().bootstrapAdmin(FIRST);
    const envelope = decodeCommand(entry.data);
    expect(envelope).toMatchObject({
      commandId: BOOTSTRAP_ADMIN_COMMAND_ID,
      kind: "system.bootstrapAdmin",
      tenant: "system",
      principal: "system",
      params: {},
      generated: { keyHash: FIRST },
      payload: "",
    });
    expect(envelope.keyId).toBeUndefined();
  });
});
