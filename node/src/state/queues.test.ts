import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LeaseResult } from "./queues.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(
    temp.create("s", {
      maxDeliveryAttempts: 2,
      maxLeaseBatch: 5,
      maxLeaseBytes: 100,
      maxOutboxMessages: 2,
      maxTransactionOperations: 3,
    }),
  );
});
afterEach(() => temp.cleanup());

const enqueue = (body: unknown, delayMs?: number, queue = "jobs") =>
  h.ok<{ messageId: string; visibleAtMs: number }>(
    "queue.enqueue",
    { body, ...(delayMs === undefined ? {} : { delayMs }) },
    { params: { queue } },
  );
const lease = (body: Record<string, unknown> = {}, queue = "jobs") =>
  h.ok<LeaseResult>("queue.lease", body, { params: { queue } });
const onMessage = (messageId: string, queue = "jobs") => ({ params: { queue, messageId } });

describe("message bodies", () => {
  it("are stored as JSON.stringify writes them, whatever the payload's spelling", () => {
    // Long enough that every payload below with no backslash is written by the plain writer.
    const long = "é😀/".repeat(200);
    const bodies = [`{ "2" : "${long}", "1" : [ 1.0, -0, 1E+2 ] }`, `"${long}"`, `"${long}\\n"`];
    for (const body of bodies) {
      h.ok("queue.enqueue", `{ "body" : ${body} }`, { params: { queue: "jobs" } });
      h.ok("transaction", `{ "outbox" : [ { "queue" : "mail", "body" : ${body} } ] }`);
      const stored = JSON.stringify(JSON.parse(body));
      // A dump writes each row as a JSON array: the body's text appears as a JSON string, once a queue.
      expect(h.sm.dump().split(JSON.stringify(stored)).length).toBe(3);
    }
  });
});

describe("transactions", () => {
  it("applies puts, deletes and checks atomically, with outbox messages", () => {
    h.ok("catalog.put", { value: "old" }, { params: { key: "b" } });
    const result = h.ok("transaction", {
      operations: [
        { op: "put", key: "a", value: { n: 1 }, expectedVersion: 0 },
        { op: "check", key: "b", version: 1 },
        { op: "delete", key: "b" },
      ],
      outbox: [
        { queue: "jobs", body: { notify: "a" } },
        { queue: "mail", body: "hi", delayMs: 500 },
      ],
    });
    expect(result).toEqual({
      results: [
        { op: "put", key: "a", version: 1 },
        { op: "check", key: "b", version: 1 },
        { op: "delete", key: "b", version: 2 },
      ],
      outbox: [
        { queue: "jobs", messageId: "2.0", visibleAtMs: h.log.nowMs },
        { queue: "mail", messageId: "2.1", visibleAtMs: h.log.nowMs + 500 },
      ],
    });
    expect(lease().messages.map((m) => m.body)).toEqual([{ notify: "a" }]);
  });

  it("rolls back everything when any operation refuses", () => {
    h.ok("catalog.put", { value: 1 }, { params: { key: "a" } });
    const dump = h.sm.dump();
    const refusals = [
      [
        { op: "put", key: "new", value: 1 },
        { op: "check", key: "a", version: 2 },
      ],
      [
        { op: "put", key: "new", value: 1 },
        { op: "check", key: "missing", version: 1 },
      ],
      [
        { op: "put", key: "a", value: 2 },
        { op: "put", key: "a", value: 3, expectedVersion: 1 },
      ],
      [
        { op: "delete", key: "a" },
        { op: "delete", key: "a" },
      ],
    ];
    for (const operations of refusals) {
      const error = h.fail("transaction", { operations, outbox: [{ queue: "jobs", body: 1 }] });
      expect(["FailedPrecondition", "NotFound"]).toContain(error.code);
    }
    expect(
      h.sm
        .dump()
        .replace(/# command_outcomes[^#]*/, "")
        .replace(/# meta[^#]*/, ""),
    ).toBe(dump.replace(/# command_outcomes[^#]*/, "").replace(/# meta[^#]*/, ""));
  });

  it("checks sequentially: a check sees the operations before it", () => {
    expect(
      h.ok("transaction", {
        operations: [
          { op: "put", key: "a", value: 1 },
          { op: "check", key: "a", version: 1 },
        ],
      }),
    ).toMatchObject({
      results: [{ version: 1 }, { version: 1 }],
    });
  });

  it("refuses malformed transactions and canonical limit violations with InvalidArgument", () => {
    const bad: [unknown, string][] = [
      [{}, "EmptyTransaction"],
      [{ operations: [] }, "EmptyTransaction"],
      [{ operations: {} }, "InvalidBody"],
      [{ operations: [{ op: "upsert", key: "a" }] }, "InvalidBody"],
      [{ operations: [{ op: "put", key: "a" }] }, "InvalidBody"],
      [{ operations: [{ op: "check", key: "a" }] }, "InvalidBody"],
      [{ operations: [{ op: "put", value: 1 }] }, "InvalidBody"],
      [{ operations: [{ op: "put", key: "", value: 1 }] }, "InvalidKey"],
      [{ operations: [1] }, "InvalidBody"],
      [{ operations: Array(4).fill({ op: "check", key: "a", version: 0 }) }, "TooManyOperations"],
      [{ outbox: Array(3).fill({ queue: "jobs", body: 1 }) }, "TooManyOutboxMessages"],
      [{ outbox: [{ queue: "jobs" }] }, "InvalidBody"],
      [{ outbox: [{ queue: "bad queue", body: 1 }] }, "InvalidIdentifier"],
      [{ outbox: [{ queue: "jobs", body: 1, delayMs: -5 }] }, "InvalidBody"],
      [{ outbox: [{ queue: "jobs", body: 1, delayMs: 86_400_001 }] }, "InvalidBody"],
    ];
    for (const [body, reason] of bad) {
      expect(h.fail("transaction", body), JSON.stringify(body)).toMatchObject({
        code: "InvalidArgument",
        reason,
      });
    }
  });
});

describe("queues", () => {
  it("leases visible messages in order with a deterministic token and a visibility timeout", () => {
    const m1 = enqueue({ job: 1 });
    const m2 = enqueue({ job: 2 });
    const delayed = enqueue({ job: 3 }, 5_000);
    enqueue("elsewhere", undefined, "other");
    const first = lease({ max: 5, visibilityTimeoutMs: 1_000 });
    expect(first.messages.map((m) => [m.messageId, m.body, m.attempts])).toEqual([
      [m1.messageId, { job: 1 }, 1],
      [m2.messageId, { job: 2 }, 1],
    ]);
    expect(first.leaseToken).toMatch(/^[0-9a-f]{32}$/);
    expect(first.leaseExpiresAtMs).toBe(h.log.nowMs + 1_000);
    expect(lease()).toEqual({ queue: "jobs", leaseToken: null, leaseExpiresAtMs: null, messages: [] });
    h.advance(5_000);
    // Oldest visibility first: the expired leases came back before the delay ran out.
    expect(lease({ max: 5 }).messages.map((m) => [m.messageId, m.attempts])).toEqual([
      [m1.messageId, 2],
      [m2.messageId, 2],
      [delayed.messageId, 1],
    ]);
  });

  it("acks, nacks and renews by lease token; a wrong or expired token loses the lease", () => {
    const { messageId } = enqueue("work");
    const { leaseToken } = lease({ visibilityTimeoutMs: 1_000 });
    expect(h.fail("queue.ack", { leaseToken: "nope" }, onMessage(messageId))).toMatchObject({
      code: "LeaseLost",
      reason: "LeaseTokenMismatch",
    });
    h.advance(600);
    expect(h.ok("queue.renew", { leaseToken, visibilityTimeoutMs: 1_000 }, onMessage(messageId))).toEqual({
      queue: "jobs",
      messageId,
      leaseExpiresAtMs: h.log.nowMs + 1_000,
    });
    h.advance(600);
    expect(h.ok("queue.nack", { leaseToken, delayMs: 2_000 }, onMessage(messageId))).toMatchObject({
      deadLettered: false,
    });
    expect(h.fail("queue.ack", { leaseToken }, onMessage(messageId))).toMatchObject({
      code: "LeaseLost",
      reason: "LeaseTokenMismatch",
    });
    expect(lease().messages).toEqual([]);
    h.advance(2_000);
    const second = lease({ visibilityTimeoutMs: 1_000 });
    expect(second.messages).toEqual([expect.objectContaining({ messageId, attempts: 2 })]);
    h.advance(1_000);
    expect(h.fail("queue.ack", { leaseToken: second.leaseToken }, onMessage(messageId))).toMatchObject({
      reason: "LeaseExpired",
    });
    // Its two attempts spent, the next lease dead-letters it; acked from there, it is gone.
    expect(lease().messages).toEqual([]);
    const third = lease({}, "jobs.dead-letter");
    const dead = onMessage(messageId, "jobs.dead-letter");
    expect(h.ok("queue.ack", { leaseToken: third.leaseToken }, dead)).toEqual({
      queue: "jobs.dead-letter",
      messageId,
    });
    expect(h.fail("queue.ack", { leaseToken: third.leaseToken }, dead)).toMatchObject({
      reason: "MessageNotFound",
    });
  });

  it("moves a message to the dead-letter queue once its attempts are spent", () => {
    const { messageId } = enqueue("poison");
    const first = lease({ visibilityTimeoutMs: 100 });
    h.ok("queue.nack", { leaseToken: first.leaseToken }, onMessage(messageId));
    const second = lease({ visibilityTimeoutMs: 100 });
    expect(second.messages[0]!.attempts).toBe(2);
    // Attempts spent: a nack dead-letters at once ...
    expect(h.ok("queue.nack", { leaseToken: second.leaseToken }, onMessage(messageId))).toMatchObject({
      deadLettered: true,
    });
    expect(lease().messages).toEqual([]);
    const dead = lease({}, "jobs.dead-letter");
    expect(dead.messages).toEqual([expect.objectContaining({ messageId, body: "poison", attempts: 3 })]);
    // ... and an expired lease dead-letters at the next lease.
    const other = enqueue("slow");
    lease({ visibilityTimeoutMs: 100 });
    h.advance(200);
    lease({ visibilityTimeoutMs: 100 });
    h.advance(200);
    expect(lease().messages).toEqual([]);
    expect(lease({}, "jobs.dead-letter").messages.map((m) => m.messageId)).toEqual([other.messageId]);
    // A dead-letter queue keeps its messages whatever their attempts.
    h.advance(60_000);
    expect(lease({ max: 5 }, "jobs.dead-letter").messages).toHaveLength(2);
  });

  it("fills a lease batch past messages it dead-letters", () => {
    const poison = enqueue("poison");
    for (let i = 0; i < 2; i++) {
      lease({ visibilityTimeoutMs: 10 });
      h.advance(20);
    }
    const good = enqueue("good");
    expect(lease({ max: 1 }).messages.map((m) => m.messageId)).toEqual([good.messageId]);
    expect(lease({}, "jobs.dead-letter").messages.map((m) => m.messageId)).toEqual([poison.messageId]);
  });

  it("holds at most maxLeaseBytes of bodies in a lease, and always the first message", () => {
    // Each body is stored as 42 bytes of JSON: two fit in 100, a third does not.
    const text = "x".repeat(40);
    const ids = [1, 2, 3].map(() => enqueue(text).messageId);
    expect(lease({ max: 5 }).messages.map((m) => m.messageId)).toEqual(ids.slice(0, 2));
    const large = enqueue("y".repeat(500)).messageId;
    expect(lease({ max: 5 }).messages.map((m) => m.messageId)).toEqual([ids[2]]);
    expect(lease({ max: 5 }).messages.map((m) => m.messageId)).toEqual([large]);
  });

  it("dead-letters at most maxLeaseBatch messages in one lease", () => {
    const poison = [1, 2, 3, 4, 5, 6, 7].map(() => enqueue("poison").messageId);
    for (let i = 0; i < 2; i++) {
      lease({ max: 5, visibilityTimeoutMs: 10 });
      lease({ max: 5, visibilityTimeoutMs: 10 });
      h.advance(20);
    }
    const good = enqueue("good").messageId;
    expect(lease({ max: 1 })).toMatchObject({ leaseToken: null, messages: [] });
    expect(lease({ max: 1 }).messages.map((m) => m.messageId)).toEqual([good]);
    const dead = [lease({ max: 5 }, "jobs.dead-letter"), lease({ max: 5 }, "jobs.dead-letter")];
    expect(dead.flatMap((d) => d.messages.map((m) => m.messageId))).toEqual(poison);
  });

  it("completes a message with writes and outbox atomically, once per command ID", () => {
    const { messageId } = enqueue({ order: 7 });
    const { leaseToken } = lease();
    const body = {
      leaseToken,
      operations: [{ op: "put", key: "orders/7", value: { state: "done" } }],
      outbox: [{ queue: "mail", body: "order 7 done" }],
    };
    const result = h.ok("queue.complete", body, { ...onMessage(messageId), commandId: "done-7" });
    expect(result).toMatchObject({
      queue: "jobs",
      messageId,
      results: [{ op: "put", key: "orders/7", version: 1 }],
      outbox: [{ queue: "mail" }],
    });
    expect(h.run("queue.complete", body, { ...onMessage(messageId), commandId: "done-7" })).toMatchObject({
      duplicate: true,
    });
    expect(h.sm.getDocument("t1", "orders/7")?.version).toBe(1);
    expect(lease({}, "mail").messages.map((m) => m.body)).toEqual(["order 7 done"]);
    expect(lease().messages).toEqual([]);
  });

  it("leaves the message leased when a processing effect's write refuses", () => {
    const { messageId } = enqueue(1);
    const { leaseToken } = lease();
    const body = {
      leaseToken,
      operations: [{ op: "check", key: "x", version: 3 }],
      outbox: [{ queue: "mail", body: 1 }],
    };
    expect(h.fail("queue.complete", body, onMessage(messageId))).toMatchObject({
      code: "FailedPrecondition",
    });
    expect(lease({}, "mail").messages).toEqual([]);
    expect(h.ok("queue.ack", { leaseToken }, onMessage(messageId))).toEqual({ queue: "jobs", messageId });
    expect(h.fail("queue.complete", { leaseToken }, onMessage(messageId))).toMatchObject({
      code: "LeaseLost",
    });
  });

  it("refuses bad queue commands with InvalidArgument", () => {
    const bad: [string, unknown, Record<string, string>][] = [
      ["queue.enqueue", {}, { queue: "jobs" }],
      ["queue.enqueue", { body: 1, delayMs: -1 }, { queue: "jobs" }],
      ["queue.enqueue", { body: JSON.parse(`${"[".repeat(65)}${"]".repeat(65)}`) }, { queue: "jobs" }],
      ["queue.enqueue", "nope", { queue: "jobs" }],
      ["queue.lease", { max: 6 }, { queue: "jobs" }],
      ["queue.lease", { max: 0 }, { queue: "jobs" }],
      ["queue.lease", { visibilityTimeoutMs: 0 }, { queue: "jobs" }],
      ["queue.lease", { visibilityTimeoutMs: 12 * 3_600_000 + 1 }, { queue: "jobs" }],
      ["queue.ack", {}, { queue: "jobs", messageId: "1.0" }],
      ["queue.ack", "", { queue: "jobs", messageId: "1.0" }],
      ["queue.nack", { leaseToken: "t", delayMs: "soon" }, { queue: "jobs", messageId: "1.0" }],
      ["queue.renew", { leaseToken: 5 }, { queue: "jobs", messageId: "1.0" }],
      ["queue.complete", { leaseToken: "t", operations: "x" }, { queue: "jobs", messageId: "1.0" }],
    ];
    for (const [kind, body, params] of bad) {
      expect(h.fail(kind as never, body, { params }), `${kind} ${JSON.stringify(body)}`).toMatchObject({
        code: "InvalidArgument",
      });
    }
  });
});
