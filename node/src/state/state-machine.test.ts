import { InternalError } from "@keyload/contract";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashApiKey } from "./api-key.js";
import type { EntryKind } from "./command-envelope.js";
import { COMMAND_HANDLERS, REFUSES_AFTER_WRITING } from "./command-handlers.js";
import { STATE_PAGE_BYTES } from "./database.js";
import { DEFAULT_LIMITS, limitsFingerprint, limitsText, resolveLimits } from "./limits.js";
import {
  ADMIN_KEY,
  type CommandOptions,
  committed,
  Harness,
  LogBuilder,
  outcomeOf,
  refused,
  TempStates,
} from "./test-fixtures/state-fixtures.js";

describe("canonical limits", () => {
  it("fills defaults and fingerprints the values, not their order", () => {
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
    const a = resolveLimits({ maxLeaseBatch: 10, maxOutboxMessages: 3 });
    const b = resolveLimits({ maxOutboxMessages: 3, maxLeaseBatch: 10 });
    expect(limitsFingerprint(a)).toBe(limitsFingerprint(b));
    expect(limitsFingerprint(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(limitsFingerprint(a)).not.toBe(limitsFingerprint(resolveLimits()));
  });

  it("refuses values that are not positive integers, unknown names and inconsistent timeouts", () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => resolveLimits({ maxLeaseBatch: bad })).toThrow(/maxLeaseBatch/);
    }
    expect(() => resolveLimits({ maxLeases: 3 } as never)).toThrow(/unknown canonical limit maxLeases/);
    expect(() => resolveLimits({ defaultVisibilityTimeoutMs: 10, maxVisibilityTimeoutMs: 5 })).toThrow(
      /exceeds/,
    );
  });
});

describe("state machine", () => {
  let temp: TempStates;
  beforeEach(() => {
    temp = new TempStates();
  });
  afterEach(() => temp.cleanup());

  it("advances the applied index on noops and skips entries it already applied", () => {
    const sm = temp.create("s");
    const log = new LogBuilder();
    expect(sm.apply(log.noop())).toEqual({ type: "noop", entryIndex: 1 });
    const put = log.command("catalog.put", { value: 1 }, { params: { key: "k" } });
    expect(committed(sm.apply(put))).toEqual({ key: "k", version: 1 });
    expect(sm.applied()).toEqual({ index: 2, term: 1 });
    const before = sm.dump();
    expect(sm.applyBatch(log.entries)).toEqual([
      { type: "skipped", entryIndex: 1 },
      { type: "skipped", entryIndex: 2 },
    ]);
    expect(sm.dump()).toBe(before);
  });

  it("refuses a gap in the log without applying anything", () => {
    const sm = temp.create("s");
    const log = new LogBuilder();
    log.noop();
    const second = log.noop();
    expect(() => sm.apply(second)).toThrow(expect.objectContaining({ reason: "ApplyGap" }));
    expect(() => sm.applyBatch([log.entries[0]!, log.entries[0]!])).toThrow(InternalError);
    expect(sm.applied().index).toBe(0);
  });

  it("persists state and applied index across a reopen", async () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    h.ok("catalog.put", { value: { a: 1 } }, { params: { key: "k" } });
    const dump = sm.dump();
    await sm.close();
    const reopened = temp.create("s");
    expect(reopened.applied()).toEqual({ index: 1, term: 1 });
    expect(reopened.dump()).toBe(dump);
    expect(reopened.getDocument("t1", "k")).toEqual({ key: "k", value: { a: 1 }, version: 1 });
  });

  it("keeps the page size its database was created with, through rewrites, reopens and snapshots", async () => {
    const pageBytes = (name: string): unknown => {
      const db = new Database(temp.path(`${name}.db`), { readonly: true });
      try {
        return db.pragma("page_size", { simple: true });
      } finally {
        db.close();
      }
    };
    // A state an earlier build created: 4 KiB pages, SQLite's default.
    const earlier = new Database(temp.path("earlier.db"));
    earlier.pragma("page_size = 4096");
    earlier.pragma("journal_mode = WAL");
    earlier.close();
    const sizes = [10, 1024, 40_000, 100_000];
    const fill = (h: Harness, round: number): void => {
      for (const size of sizes) {
        h.ok("catalog.put", { value: String(round).repeat(size) }, { params: { key: `k${size}` } });
      }
    };
    for (const [name, expected] of [
      ["fresh", STATE_PAGE_BYTES],
      ["earlier", 4096],
    ] as const) {
      const sm = temp.create(name);
      const h = new Harness(sm);
      // Each document written twice, the second time with another value of the same size.
      fill(h, 1);
      fill(h, 2);
      await sm.close();
      const reopened = temp.create(name);
      for (const size of sizes) {
        expect(reopened.getDocument("t1", `k${size}`)).toEqual({
          key: `k${size}`,
          value: "2".repeat(size),
          version: 2,
        });
      }
      await reopened.close();
      expect(pageBytes(name)).toBe(expected);
    }
    // A snapshot of either page size installs on a voter whose database has the other.
    for (const [from, to] of [
      ["fresh", "earlier"],
      ["earlier", "fresh"],
    ] as const) {
      const source = temp.create(from);
      await source.createSnapshot(temp.path(`${from}.snap`));
      const target = temp.create(to);
      target.restoreFromSnapshot(temp.path(`${from}.snap`));
      expect(target.dump()).toBe(source.dump());
      await target.close();
      await source.close();
    }
  });

  it("commits a malformed envelope as a deterministic InvalidArgument that takes no command ID", () => {
    const sm = temp.create("s");
    const log = new LogBuilder();
    const result = sm.apply(log.raw(new TextEncoder().encode("not an envelope")));
    expect(result).toMatchObject({ type: "command", tenant: null, commandId: null, duplicate: false });
    expect(outcomeOf(result)).toMatchObject({
      status: "failed",
      index: 1,
      error: { code: "InvalidArgument", reason: "MalformedEnvelope" },
    });
    expect(sm.applied().index).toBe(1);
  });

  it("commits a payload over the canonical mutation limit as InvalidArgument under its command ID", () => {
    const sm = temp.create("s", { maxMutationBytes: 64 });
    const h = new Harness(sm);
    const big = { value: "é".repeat(30) };
    expect(h.fail("catalog.put", big, { params: { key: "k" }, commandId: "big" })).toMatchObject({
      code: "InvalidArgument",
      reason: "MutationTooLarge",
    });
    expect(sm.commandOutcome("t1", "big")).toMatchObject({
      status: "failed",
      error: { reason: "MutationTooLarge" },
    });
    expect(sm.getDocument("t1", "k")).toBeUndefined();
    h.ok("catalog.put", { value: "small" }, { params: { key: "k" } });
  });

  it("keeps entry time monotonic when a new leader's clock runs behind, and moving with its monotonic clock", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    const t0 = h.log.nowMs + 1;
    h.ok("dispatch.append", { directive: "a" }, { params: { channel: "c" } });
    h.log.term++;
    h.ok("dispatch.append", { directive: "b" }, { params: { channel: "c" }, timestampMs: t0 - 10_000 });
    h.ok(
      "dispatch.append",
      { directive: "c" },
      { params: { channel: "c" }, timestampMs: t0 - 9_000, advanceMs: 1_000 },
    );
    expect(sm.readDispatch("t1", "c", 0).map((d) => d.atMs)).toEqual([t0, t0, t0 + 1_000]);
  });

  it("keeps its clock, the leader's last monotonic reading included, across a reopen and a snapshot", async () => {
    const log = new LogBuilder();
    const append = (options: CommandOptions) =>
      log.command("dispatch.append", { directive: "d" }, { params: { channel: "c" }, ...options });
    const sm = temp.create("s");
    sm.apply(append({}));
    const t0 = log.nowMs;
    await sm.close();
    const reopened = temp.create("s");
    // One term, its leader's wall clock stuck: only the stored monotonic reading tells how far time moved.
    reopened.apply(append({ advanceMs: 700, timestampMs: t0 }));
    await reopened.createSnapshot(temp.path("snap.db"));
    const restored = temp.create("r");
    restored.restoreFromSnapshot(temp.path("snap.db"));
    restored.apply(append({ advanceMs: 300, timestampMs: t0 }));
    expect(restored.readDispatch("t1", "c", 0).map((d) => d.atMs)).toEqual([t0, t0 + 700, t0 + 1_000]);
  });

  it("rolls back a whole batch and throws on an error that is not a deterministic refusal", () => {
    const sm = temp.create("s");
    const log = new LogBuilder();
    sm.apply(log.command("catalog.put", { value: 1 }, { params: { key: "before" } }));
    const dump = sm.dump();
    const batch = [
      log.command("catalog.put", { value: 2 }, { params: { key: "k" } }),
      log.command("dispatch.append", { directive: "x" }, { params: { channel: "c" } }),
    ];
    const original = COMMAND_HANDLERS["dispatch.append"];
    COMMAND_HANDLERS["dispatch.append"] = () => {
      throw new TypeError("a bug");
    };
    try {
      expect(() => sm.applyBatch(batch)).toThrow(
        expect.objectContaining({ code: "Internal", reason: "ApplyFailed" }),
      );
    } finally {
      COMMAND_HANDLERS["dispatch.append"] = original;
    }
    expect(sm.applied().index).toBe(1);
    expect(sm.dump()).toBe(dump);
    expect(sm.applyBatch(batch).map((r) => outcomeOf(r).status)).toEqual(["committed", "committed"]);
  });
});

describe("refusals without a savepoint", () => {
  let temp: TempStates;
  beforeEach(() => {
    temp = new TempStates();
  });
  afterEach(() => temp.cleanup());

  /** The state but for command outcomes and the applied position, which every entry changes. */
  const withoutBookkeeping = (dump: string) =>
    dump.replace(/# command_outcomes[^#]*/, "").replace(/# meta[^#]*/, "");

  it("leave no write behind for every kind that runs without one", () => {
    const h = new Harness(temp.create("s"));
    const admin = { tenant: "system", principal: "admin" };
    committed(h.bootstrapAdmin());
    h.ok("catalog.put", { value: 1 }, { params: { key: "k" } });
    h.ok("queue.enqueue", { body: 1 }, { params: { queue: "q" } });
    const lease = h.ok<{ messages: { messageId: string }[] }>("queue.lease", {}, { params: { queue: "q" } });
    const onMessage = { params: { queue: "q", messageId: lease.messages[0]!.messageId } };
    h.ok("subscription.put", { prefix: "" }, { params: { name: "s" } });
    h.ok("subscription.deliver", {}, { params: { name: "s" } });
    h.ok("membership.put", { status: "active", address: "a" }, { params: { memberId: "m" } });
    const refusals: [EntryKind, unknown, CommandOptions][] = [
      ["catalog.put", { value: 2, expectedVersion: 5 }, { params: { key: "k" } }],
      ["catalog.put", { value: JSON.parse(`${"[".repeat(65)}${"]".repeat(65)}`) }, { params: { key: "k" } }],
      ["catalog.delete", { expectedVersion: 5 }, { params: { key: "k" } }],
      ["catalog.delete", "", { params: { key: "missing" } }],
      ["graph.putEdge", { from: "a", type: "t" }, {}],
      ["graph.deleteEdge", { from: "a", type: "t", to: "b" }, {}],
      ["queue.enqueue", { body: 1, delayMs: -1 }, { params: { queue: "q" } }],
      ["queue.lease", { max: 100_000 }, { params: { queue: "q" } }],
      ["queue.ack", { leaseToken: "wrong" }, onMessage],
      ["queue.nack", { leaseToken: "wrong" }, onMessage],
      ["queue.renew", { leaseToken: "wrong" }, onMessage],
      ["subscription.put", { prefix: 1 }, { params: { name: "s" } }],
      ["subscription.deliver", {}, { params: { name: "s" } }],
      ["subscription.ack", "", { params: { name: "s", deliveryId: "wrong" } }],
      ["membership.put", { status: "dead", address: "a", etag: "wrong" }, { params: { memberId: "m" } }],
      ["membership.put", { iAmAlive: true }, { params: { memberId: "ghost" } }],
      ["dispatch.append", { directive: "" }, { params: { channel: "c" } }],
      ["admin.createKey", "", { ...admin, params: { principalId: "ghost" }, keyHash: hashApiKey("x") }],
      ["admin.createKey", "", { ...admin, params: { principalId: "admin" }, keyHash: hashApiKey(ADMIN_KEY) }],
      ["admin.createKey", "", { params: { principalId: "admin" }, keyHash: hashApiKey("y") }],
      [
        "system.bootstrapAdmin",
        "{not json",
        { tenant: "system", principal: "system", keyHash: hashApiKey("z") },
      ],
      ["system.bootstrapAdmin", "", { ...admin, keyId: "bootstrap", keyHash: hashApiKey("z") }],
      ["system.canonicalLimits", { maxMutationBytes: 1 }, { tenant: "system", principal: "system" }],
      ["system.canonicalLimits", "{not json", { tenant: "system", principal: "system" }],
      ["system.canonicalLimits", limitsText(DEFAULT_LIMITS), { ...admin, keyId: "bootstrap" }],
    ];
    const kinds = new Set(refusals.map(([kind]) => kind));
    for (const kind of Object.keys(COMMAND_HANDLERS) as EntryKind[]) {
      expect(kinds.has(kind) || REFUSES_AFTER_WRITING.has(kind), kind).toBe(true);
    }
    for (const [kind, payload, options] of refusals) {
      const before = withoutBookkeeping(h.sm.dump());
      expect(refused(h.run(kind, payload, options)), kind).toBeDefined();
      expect(withoutBookkeeping(h.sm.dump()), `${kind} ${JSON.stringify(payload)}`).toBe(before);
    }
  });
});

describe("command outcomes", () => {
  let temp: TempStates;
  beforeEach(() => {
    temp = new TempStates();
  });
  afterEach(() => temp.cleanup());

  it("returns the stored outcome for a duplicate without applying it again", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    const first = h.run("catalog.put", { value: { n: 1 } }, { params: { key: "k" }, commandId: "c1" });
    const dump = sm.dump().replace(/\n# meta.*\n.*\n/, "");
    const again = h.run(
      "catalog.put",
      { value: { n: 1 } },
      { params: { key: "k" }, commandId: "c1", principal: "p2" },
    );
    expect(again).toMatchObject({
      type: "command",
      entryIndex: 2,
      duplicate: true,
      commandId: "c1",
      tenant: "t1",
    });
    expect(outcomeOf(again)).toStrictEqual(outcomeOf(first));
    expect(sm.dump().replace(/\n# meta.*\n.*\n/, "")).toBe(dump);
    expect(sm.getDocument("t1", "k")?.version).toBe(1);
    expect(sm.commandOutcome("t1", "c1")).toStrictEqual({ commandId: "c1", ...outcomeOf(first) });
  });

  it("stores refusals too, and answers a duplicate of a refusal with the same refusal", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    const refusal = h.fail("catalog.delete", "", { params: { key: "nope" }, commandId: "d1" });
    expect(refusal).toMatchObject({ code: "NotFound", reason: "DocumentNotFound" });
    h.ok("catalog.put", { value: 1 }, { params: { key: "nope" } });
    const again = h.run("catalog.delete", "", { params: { key: "nope" }, commandId: "d1" });
    expect(outcomeOf(again)).toEqual({ status: "failed", index: 1, error: refusal });
    expect(sm.getDocument("t1", "nope")).toBeDefined();
  });

  it("answers CommandIdConflict for the same ID with another route or body, per tenant", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    h.ok("catalog.put", { value: 1 }, { params: { key: "k" }, commandId: "c1" });
    const conflicts = [
      h.run("catalog.put", { value: 2 }, { params: { key: "k" }, commandId: "c1" }),
      h.run("catalog.put", { value: 1 }, { params: { key: "other" }, commandId: "c1" }),
      h.run("catalog.delete", { value: 1 }, { params: { key: "k" }, commandId: "c1" }),
    ];
    for (const result of conflicts) {
      expect(outcomeOf(result)).toMatchObject({
        status: "failed",
        error: { code: "CommandIdConflict", reason: "DigestMismatch" },
      });
    }
    expect(sm.commandOutcome("t1", "c1")).toMatchObject({ status: "committed", index: 1 });
    // Another tenant's c1 is another command.
    expect(
      h.ok("catalog.put", { value: 2 }, { params: { key: "k" }, commandId: "c1", tenant: "t2" }),
    ).toEqual({ key: "k", version: 1 });
    expect(sm.commandOutcome("t2", "c1")).toMatchObject({ index: 5 });
    expect(sm.commandOutcome("t3", "c1")).toBeUndefined();
  });

  it("keeps outcomes while young OR among the most recent, and only then expires them", () => {
    const sm = temp.create("s", {
      outcomeRetentionCommands: 3,
      outcomeRetentionMs: 1_000,
      dedupeRetentionMs: 5_000,
    });
    const h = new Harness(sm);
    for (let i = 1; i <= 6; i++)
      h.ok("dispatch.append", { directive: "x" }, { params: { channel: "c" }, commandId: `c${i}` });
    // Six commands within a second: past the count, but young, so all are kept.
    for (let i = 1; i <= 6; i++) expect(sm.commandOutcome("t1", `c${i}`)).toBeDefined();
    h.advance(2_000);
    h.ok("dispatch.append", { directive: "x" }, { params: { channel: "c" }, commandId: "c7" });
    // Now c1..c4 are old and outside the last three commands (c5, c6, c7): only their dedupe records stay.
    for (let i = 1; i <= 4; i++)
      expect(sm.commandOutcome("t1", `c${i}`)).toMatchObject({ status: "expired" });
    for (let i = 5; i <= 7; i++)
      expect(sm.commandOutcome("t1", `c${i}`)).toMatchObject({ status: "committed" });
    expect(
      h.fail("dispatch.append", { directive: "x" }, { params: { channel: "c" }, commandId: "c1" }),
    ).toMatchObject({ reason: "OutcomeExpired" });
    // Past the dedupe window too (the next command expires the record), the ID is free again.
    h.advance(5_000);
    h.ok("dispatch.append", { directive: "x" }, { params: { channel: "c" }, commandId: "c8" });
    const reused = h.run(
      "dispatch.append",
      { directive: "x" },
      { params: { channel: "c" }, commandId: "c1" },
    );
    expect(reused).toMatchObject({ duplicate: false });
    expect(committed(reused)).toEqual({ channel: "c", sequence: 9 });
  });

  it("expires by count alone once outcomes are old, a few per apply", () => {
    const sm = temp.create("s", { outcomeRetentionCommands: 2, outcomeRetentionMs: 1 });
    const h = new Harness(sm);
    for (let i = 1; i <= 30; i++) {
      h.ok(
        "dispatch.append",
        { directive: "x" },
        { params: { channel: "c" }, commandId: `c${i}`, advanceMs: 10 },
      );
    }
    const kept = Array.from(
      { length: 30 },
      (_, i) => sm.commandOutcome("t1", `c${i + 1}`)?.status === "committed",
    );
    expect(kept.filter(Boolean)).toHaveLength(2);
    expect(kept.slice(-2)).toEqual([true, true]);
  });

  it("expires after a rolled-back batch exactly as a voter that never saw it fail", () => {
    const limits = { outcomeRetentionCommands: 1, outcomeRetentionMs: 1 };
    const failed = temp.create("failed", limits);
    const twin = temp.create("twin", limits);
    const log = new LogBuilder();
    const append = (commandId: string, advanceMs: number) =>
      log.command("dispatch.append", { directive: "x" }, { params: { channel: "c" }, commandId, advanceMs });
    const first = append("c1", 10);
    // c2 expires c1; c3, written in the same millisecond as c2, leaves c2 young: expiry then knows the
    // oldest outcome is c2, which the rollback makes wrong again.
    const batch = [
      append("c2", 10),
      append("c3", 0),
      log.command("catalog.put", { value: 1 }, { params: { key: "k" } }),
    ];
    for (const sm of [failed, twin]) sm.apply(first);
    const original = COMMAND_HANDLERS["catalog.put"];
    COMMAND_HANDLERS["catalog.put"] = () => {
      throw new TypeError("a bug");
    };
    try {
      expect(() => failed.applyBatch(batch)).toThrow(expect.objectContaining({ reason: "ApplyFailed" }));
    } finally {
      COMMAND_HANDLERS["catalog.put"] = original;
    }
    for (const sm of [failed, twin]) sm.applyBatch(batch);
    expect(failed.commandOutcome("t1", "c1")).toMatchObject({ status: "expired" });
    expect(failed.dump()).toBe(twin.dump());
  });

  it("answers a fresh result exactly as its stored outcome will", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    h.ok("queue.enqueue", { body: { job: 1 } }, { params: { queue: "q" } });
    const results = [
      h.run("queue.lease", { max: 5 }, { params: { queue: "q" }, commandId: "lease" }),
      h.run(
        "transaction",
        {
          operations: [{ op: "put", key: "a", value: [1, { b: null }] }],
          outbox: [{ queue: "q", body: "x" }],
        },
        { commandId: "tx" },
      ),
      h.run("graph.putEdge", { from: "a", type: "t", to: "b" }, { commandId: "edge" }),
    ];
    for (const result of results) {
      if (result.type !== "command" || result.commandId === null) throw new Error("not a command");
      const { commandId: _, ...stored } = sm.commandOutcome("t1", result.commandId)!;
      expect(stored).toStrictEqual(result.outcome);
    }
  });

  it("ignores claims of tenant or principal in a body: scope comes from the envelope only", () => {
    const sm = temp.create("s");
    const h = new Harness(sm);
    h.ok(
      "catalog.put",
      { value: 1, tenant: "t9", tenantId: "t9", principal: "admin" },
      { params: { key: "k" } },
    );
    expect(sm.getDocument("t1", "k")).toBeDefined();
    expect(sm.getDocument("t9", "k")).toBeUndefined();
    expect(
      refused(
        h.run("admin.putPrincipal", {
          principalId: "x",
          tenantId: "t1",
          roles: ["admin"],
          principal: "admin",
        }),
      ),
    ).toMatchObject({
      code: "PermissionDenied",
    });
  });
});
