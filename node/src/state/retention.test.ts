import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Entry } from "../raft/types.js";
import { DEFAULT_LIMITS, resolveLimits } from "./limits.js";
import type { StateMachine } from "./state-machine.js";
import type { Delivery } from "./subscriptions.js";
import { Harness, LogBuilder, outcomeOf, refused, TempStates } from "./test-fixtures/state-fixtures.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Short windows, so a test crosses them by moving the leader's clock. */
const LIMITS = {
  outcomeRetentionMs: HOUR,
  outcomeRetentionCommands: 2,
  dedupeRetentionMs: 4 * HOUR,
  changeRetentionMs: 2 * HOUR,
  tombstoneRetentionMs: HOUR,
  directiveRetentionMs: HOUR,
  deadLetterRetentionMs: HOUR,
  defunctMemberRetentionMs: HOUR,
  maxDeliveryAttempts: 1,
};

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("r", LIMITS));
});
afterEach(() => temp.cleanup());

const put = (key: string, value: unknown, options: { expectedVersion?: number; commandId?: string } = {}) =>
  h.run(
    "catalog.put",
    { value, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
    { params: { key }, ...(options.commandId === undefined ? {} : { commandId: options.commandId }) },
  );
const del = (key: string) => h.ok<{ version: number }>("catalog.delete", "", { params: { key } });
const rows = (sm: StateMachine, table: string) =>
  sm
    .dump()
    .split("\n# ")
    .find((section) => section.startsWith(`${table} (`))!
    .split("\n")
    .slice(1)
    .filter((line) => line !== "");

describe("retention", () => {
  it("rejects a dedupe window shorter than the full outcome window with a typed error", () => {
    expect(() => resolveLimits({ outcomeRetentionMs: 2 * HOUR, dedupeRetentionMs: HOUR })).toThrow(
      expect.objectContaining({ code: "InvalidArgument", reason: "InvalidCanonicalLimit" }),
    );
    expect(DEFAULT_LIMITS.dedupeRetentionMs).toBe(7 * 24 * HOUR);
  });

  it("answers a late retry past the full outcome window from the dedupe record, never applying it again", () => {
    expect(outcomeOf(put("k", 1, { commandId: "late" }))).toMatchObject({ status: "committed", index: 1 });
    h.fail("catalog.put", { value: 1, expectedVersion: 7 }, { params: { key: "k" }, commandId: "bad" });
    h.advance(2 * HOUR);
    // Three more commands push both outcomes past the count and time bounds: they become dedupe records.
    for (const n of [1, 2, 3]) put(`other/${n}`, n);
    expect(h.sm.commandOutcome("t1", "late")).toEqual({
      commandId: "late",
      status: "expired",
      index: 1,
      failed: false,
      errorCode: null,
    });
    expect(h.sm.commandOutcome("t1", "bad")).toMatchObject({ status: "expired", failed: true });
    expect(h.sm.commandOutcome("t1", "bad")).toMatchObject({ errorCode: "FailedPrecondition" });
    expect(h.sm.commandOutcome("t1", "never-sent")).toBeUndefined();

    const retry = put("k", 1, { commandId: "late" });
    expect(outcomeOf(retry)).toMatchObject({
      status: "failed",
      index: 1,
      error: { code: "CommandIdConflict", reason: "OutcomeExpired" },
    });
    expect(h.sm.getDocument("t1", "k")?.version).toBe(1);
    expect(refused(put("k", 2, { commandId: "late" }))).toMatchObject({ reason: "DigestMismatch" });

    h.advance(4 * HOUR);
    put("other/4", 4);
    expect(h.sm.commandOutcome("t1", "late")).toBeUndefined();
  });

  it("purges old tombstones and keeps conditional writes right across the purge (ABA)", () => {
    put("k", "a");
    put("k", "b");
    expect(del("k").version).toBe(3);
    h.advance(2 * HOUR);
    put("trigger", 1);
    del("trigger");
    expect(rows(h.sm, "documents").some((row) => row.includes('"k"'))).toBe(false);
    // A writer that read version 2 before the delete must still fail, and a new "k" starts above 3.
    expect(refused(put("k", "stale", { expectedVersion: 2 }))).toMatchObject({ reason: "VersionMismatch" });
    const fresh = outcomeOf(put("k", "new", { expectedVersion: 0 }));
    expect(fresh).toMatchObject({ status: "committed", result: { version: 4 } });
    expect(refused(put("k", "stale", { expectedVersion: 2 }))).toMatchObject({ reason: "VersionMismatch" });
  });

  it("trims consumed changes, and tells a lagging subscription which ones it lost to age", () => {
    const subscribe = (name: string) => h.ok("subscription.put", { prefix: "" }, { params: { name } });
    const deliver = (name: string) => h.ok<Delivery>("subscription.deliver", {}, { params: { name } });
    const ack = (name: string, id: string) =>
      h.ok("subscription.ack", "", { params: { name, deliveryId: id } });
    subscribe("fast");
    subscribe("slow");
    for (const n of [1, 2, 3]) put(`k${n}`, n);
    const fastFirst = deliver("fast");
    ack("fast", fastFirst.deliveryId!);
    put("k4", 4);
    // Both subscriptions still need 1..3: "slow" has consumed nothing.
    expect(rows(h.sm, "changes")).toHaveLength(4);
    const slowFirst = deliver("slow");
    expect(slowFirst.trimmed).toBeNull();
    ack("slow", slowFirst.deliveryId!);
    put("k5", 5);
    // "fast" is at 3, "slow" at 4: 1..3 are consumed by both and go.
    expect(rows(h.sm, "changes").map((row) => JSON.parse(row)[1])).toEqual([4, 5]);

    h.advance(3 * HOUR);
    for (const n of [6, 7, 8, 9, 10]) put(`k${n}`, n);
    // 4 and 5 grew older than changeRetentionMs before "fast" read them.
    const fast = deliver("fast");
    expect(fast.trimmed).toEqual({ fromSeq: 4, throughSeq: 5 });
    expect(fast.changes.map((c) => c.seq)).toEqual([6, 7, 8, 9, 10]);
    expect(ack("fast", fast.deliveryId!)).toMatchObject({ cursor: 10 });
    expect(deliver("fast")).toMatchObject({ deliveryId: null, trimmed: null });
  });

  it("removes the expired directives of channels no one appends to any more, a few an append", () => {
    for (let c = 0; c < 10; c++) {
      h.ok(
        "dispatch.append",
        { directive: "go", data: "x".repeat(100) },
        { params: { channel: `silo-${c}` } },
      );
    }
    h.advance(2 * HOUR);
    expect(rows(h.sm, "directives")).toHaveLength(10);
    // Appends to another channel remove four of them each, oldest first, whichever tenant's.
    h.ok("dispatch.append", { directive: "go" }, { params: { channel: "live" } });
    expect(rows(h.sm, "directives")).toHaveLength(7);
    h.ok("dispatch.append", { directive: "go" }, { params: { channel: "live" }, tenant: "t2" });
    h.ok("dispatch.append", { directive: "go" }, { params: { channel: "live" } });
    expect(rows(h.sm, "directives").filter((r) => r.includes("silo-"))).toEqual([]);
    // A channel's sequence goes on after its directives went.
    const next = h.ok<{ sequence: number }>(
      "dispatch.append",
      { directive: "go" },
      { params: { channel: "silo-0" } },
    );
    expect(next.sequence).toBe(2);
  });

  it("removes directives and dead letters past their windows", () => {
    const dispatch = (n: number) =>
      h.ok("dispatch.append", { directive: `d${n}` }, { params: { channel: "c" } });
    dispatch(1);
    dispatch(2);
    h.advance(2 * HOUR);
    dispatch(3);
    expect(h.sm.readDispatch("t1", "c", 0).map((d) => d.sequence)).toEqual([3]);
    // An idle channel: its directive is read by no one once past the window, by the applied clock.
    h.ok("dispatch.append", { directive: "stop" }, { params: { channel: "idle" } });
    h.advance(HOUR - 1);
    dispatch(4);
    expect(h.sm.readDispatch("t1", "idle", 0).map((d) => d.directive)).toEqual(["stop"]);
    h.advance(2);
    dispatch(5);
    expect(h.sm.readDispatch("t1", "idle", 0)).toEqual([]);
    expect(h.sm.readDispatch("t1", "c", 0).map((d) => d.sequence)).toEqual([4, 5]);

    const deadLetter = (n: number) => {
      h.ok("queue.enqueue", { body: n }, { params: { queue: "jobs" } });
      const lease = h.ok<{ leaseToken: string; messages: { messageId: string }[] }>(
        "queue.lease",
        {},
        { params: { queue: "jobs" } },
      );
      const messageId = lease.messages[0]!.messageId;
      h.ok("queue.nack", { leaseToken: lease.leaseToken }, { params: { queue: "jobs", messageId } });
    };
    deadLetter(1);
    deadLetter(2);
    expect(rows(h.sm, "queue_messages")).toHaveLength(2);
    h.advance(2 * HOUR);
    deadLetter(3);
    const left = rows(h.sm, "queue_messages");
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(/"jobs\.dead-letter"/);
  });

  it("removes dead membership rows once their I-am-alive time is past the window, and no other", () => {
    const member = (id: string, status: string) =>
      h.ok("membership.put", { status, address: `10.0.0.1:${id}` }, { params: { memberId: id } });
    member("s1", "dead");
    member("s2", "active");
    h.advance(30 * MINUTE);
    member("s3", "dead");
    h.advance(40 * MINUTE);
    // s1 died 70 minutes ago, s3 40: only s1 is past the window, and s2 lives on however old.
    member("s4", "joining");
    expect(h.sm.membership("t1").members.map((m) => m.memberId)).toEqual(["s2", "s3", "s4"]);
    h.advance(HOUR);
    h.ok("membership.put", { iAmAlive: true }, { params: { memberId: "s2" } });
    expect(h.sm.membership("t1").members.map((m) => m.memberId)).toEqual(["s2", "s4"]);
  });

  it("writes an old dead row under its etag, purging the other defunct rows but not it", () => {
    const put = (id: string, write: Record<string, unknown>) =>
      h.ok<{ etag: string }>("membership.put", write, { params: { memberId: id } });
    const m1 = put("m1", { status: "dead", address: "10.0.0.1:1" });
    put("m2", { status: "dead", address: "10.0.0.1:2" });
    h.advance(2 * HOUR);
    // m1 is past the window, yet the caller that read it (and its etag) may still write it.
    const again = put("m1", { status: "dead", address: "10.0.0.1:1", etag: m1.etag });
    expect(again.etag).not.toBe(m1.etag);
    expect(h.sm.membership("t1").members.map((m) => m.memberId)).toEqual(["m1"]);
    h.advance(2 * HOUR);
    h.ok("membership.put", { iAmAlive: true }, { params: { memberId: "m1" } });
    expect(h.sm.membership("t1").members.map((m) => m.memberId)).toEqual(["m1"]);
  });

  it("leaves defunct membership rows to a write that applies: a refused one writes nothing", () => {
    h.ok("membership.put", { status: "dead", address: "10.0.0.1:1" }, { params: { memberId: "old" } });
    h.advance(2 * HOUR);
    // The commands' own traces aside (outcomes, the applied index and clock).
    const state = () => h.sm.dump().replace(/# (command_outcomes|command_dedupe|meta) [^#]*/g, "");
    const before = state();
    const refusal = h.fail(
      "membership.put",
      { status: "active", address: "10.0.0.2:1", etag: "not-its-etag" },
      { params: { memberId: "other" } },
    );
    expect(refusal.code).toBe("FailedPrecondition");
    expect(h.fail("membership.put", { iAmAlive: true }, { params: { memberId: "nobody" } }).code).toBe(
      "NotFound",
    );
    expect(state()).toBe(before);
    h.ok("membership.put", { status: "active", address: "10.0.0.2:1" }, { params: { memberId: "other" } });
    expect(h.sm.membership("t1").members.map((m) => m.memberId)).toEqual(["other"]);
  });
});

describe("retention across voters", () => {
  /** A churn whose clock crosses every window several times: puts, deletes, feeds, queues, dispatch. */
  function churn(): Entry[] {
    const log = new LogBuilder();
    log.command("subscription.put", { prefix: "a/" }, { params: { name: "s" } });
    for (let i = 0; i < 600; i++) {
      const key = `${i % 3 === 0 ? "a" : "b"}/${i % 40}`;
      log.command("catalog.put", { value: i }, { params: { key }, advanceMs: 2 * MINUTE });
      if (i % 4 === 0) log.command("catalog.delete", "", { params: { key } });
      if (i % 9 === 0) log.command("dispatch.append", { directive: `d${i}` }, { params: { channel: "c" } });
      if (i % 11 === 0) log.command("queue.enqueue", { body: i }, { params: { queue: "jobs" } });
      if (i % 13 === 0) log.command("queue.lease", { max: 5 }, { params: { queue: "jobs" }, advanceMs: 1 });
      if (i % 17 === 0) log.command("subscription.deliver", {}, { params: { name: "s" } });
      if (i % 7 === 0) {
        const status = i % 2 === 0 ? "dead" : "active";
        log.command("membership.put", { status, address: "a" }, { params: { memberId: `m${i}` } });
      }
      if (i % 50 === 0)
        log.command("catalog.put", { value: i }, { params: { key: "k" }, commandId: "again" });
    }
    return log.entries;
  }

  it("trims identically on three voters applying in different batches, and a snapshot of it restores equal", async () => {
    const entries = churn();
    const voters = ["v1", "v2", "v3"].map((name) => temp.create(name, LIMITS));
    voters.forEach((voter, v) => {
      for (let start = 0; start < entries.length; ) {
        const size = 1 + ((start * 7 + v * 13) % 50);
        voter.applyBatch(entries.slice(start, start + size));
        start += size;
      }
    });
    // A fourth restarts twice midway, forgetting every in-memory note of the oldest rows, and must
    // trim from its first apply on as a voter that never stopped.
    let restarted = temp.create("v4", LIMITS);
    const steady = temp.create("v5", LIMITS);
    for (const stop of [700, 701, 705, 1400, 1401, 1405, entries.length]) {
      restarted.applyBatch(entries.slice(restarted.applied().index, stop));
      steady.applyBatch(entries.slice(steady.applied().index, stop));
      expect(restarted.dump(), `at ${stop}`).toBe(steady.dump());
      if (stop === 700 || stop === 1400) {
        await restarted.close();
        restarted = temp.create("v4", LIMITS);
      }
    }
    const reference = voters[0]!.dump();
    for (const voter of [...voters, restarted]) expect(voter.dump()).toBe(reference);
    // Trimming ran: the feed, tombstones, outcomes, directives and dead letters are all bounded.
    expect(rows(voters[0]!, "changes").length).toBeLessThan(200);
    expect(rows(voters[0]!, "command_dedupe").length).toBeGreaterThan(0);
    expect(rows(voters[0]!, "version_floors").length).toBe(1);
    expect(rows(voters[0]!, "directives").length).toBeLessThan(10);

    const snapshot = temp.path("trimmed.snap");
    await voters[1]!.createSnapshot(snapshot);
    const restored = temp.create("restored", LIMITS);
    restored.restoreFromSnapshot(snapshot);
    expect(restored.dump()).toBe(reference);
  }, 60_000);
});
