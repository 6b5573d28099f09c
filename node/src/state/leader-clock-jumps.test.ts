import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LeaseResult } from "./queues.js";
import { LEADER_CHANGE_MAX_STEP_MS } from "./replicated-clock.js";
import type { Delivery } from "./subscriptions.js";
import { type CommandOptions, Harness, TempStates } from "./test-fixtures/state-fixtures.js";

const HOUR = 60 * 60 * 1000;
const VISIBILITY_MS = 30_000;

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s"));
});
afterEach(() => temp.cleanup());

/**
 * A command `ms` after the leader's monotonic reading `from`, with its wall clock `wallOffsetMs` away
 * from where the monotonic clock puts it.
 */
function at(from: number, ms: number, wallOffsetMs = 0): CommandOptions {
  const advanceMs = from + ms - h.log.monotonicMs;
  return { advanceMs, timestampMs: h.log.nowMs + advanceMs + wallOffsetMs };
}

const lease = (options: CommandOptions = {}) =>
  h.ok<LeaseResult>(
    "queue.lease",
    { visibilityTimeoutMs: VISIBILITY_MS },
    { ...options, params: { queue: "jobs" } },
  ).messages;
const ack = (messageId: string, leaseToken: string, options: CommandOptions) =>
  h.run("queue.ack", { leaseToken }, { ...options, params: { queue: "jobs", messageId } });

/** A message leased for VISIBILITY_MS with the leader's clocks in agreement, and when, monotonically. */
function leased(): { messageId: string; leaseToken: string; leasedAt: number } {
  h.ok("queue.enqueue", { body: "work" }, { params: { queue: "jobs" } });
  const result = h.ok<LeaseResult>(
    "queue.lease",
    { visibilityTimeoutMs: VISIBILITY_MS },
    { params: { queue: "jobs" } },
  );
  expect(result.messages).toHaveLength(1);
  return {
    messageId: result.messages[0]!.messageId,
    leaseToken: result.leaseToken!,
    leasedAt: h.log.monotonicMs,
  };
}

describe("a lease under a leader whose wall clock jumps", () => {
  it("is not expired early when the leader's wall clock leaps hours ahead", () => {
    const { messageId, leaseToken, leasedAt } = leased();
    expect(lease(at(leasedAt, 10_000, 3 * HOUR))).toEqual([]);
    expect(lease(at(leasedAt, VISIBILITY_MS - 1, 3 * HOUR))).toEqual([]);
    expect(ack(messageId, leaseToken, at(leasedAt, VISIBILITY_MS - 1, 3 * HOUR))).toMatchObject({
      outcome: { status: "committed" },
    });
  });

  it("loses at most one bounded step to a new leader whose wall clock is hours ahead", () => {
    const { messageId, leasedAt } = leased();
    h.log.term++;
    expect(lease(at(leasedAt, 1, 3 * HOUR))).toEqual([]);
    // The leader change moved the clock on by the step, once; from then on by monotonic time alone.
    const expiry = VISIBILITY_MS - LEADER_CHANGE_MAX_STEP_MS + 1;
    expect(lease(at(leasedAt, expiry - 1, 3 * HOUR))).toEqual([]);
    expect(lease(at(leasedAt, expiry, 3 * HOUR))).toEqual([
      expect.objectContaining({ messageId, attempts: 2 }),
    ]);
  });

  it("still expires on time when the leader's wall clock steps back an hour", () => {
    const { messageId, leaseToken, leasedAt } = leased();
    expect(lease(at(leasedAt, 1_000, -HOUR))).toEqual([]);
    expect(lease(at(leasedAt, VISIBILITY_MS - 1, -HOUR))).toEqual([]);
    // An hour behind on the wall clock, yet the lease ran out: the message is leased again.
    expect(lease(at(leasedAt, VISIBILITY_MS, -HOUR))).toEqual([
      expect.objectContaining({ messageId, attempts: 2 }),
    ]);
    expect(ack(messageId, leaseToken, at(leasedAt, VISIBILITY_MS, -HOUR))).toMatchObject({
      outcome: { status: "failed", error: { code: "LeaseLost" } },
    });
  });

  it("still expires under a new leader whose wall clock runs an hour behind", () => {
    const { messageId, leasedAt } = leased();
    h.log.term++;
    // Behind, the new leader's wall clock measures none of the second since the last command.
    expect(lease(at(leasedAt, 1_000, -HOUR))).toEqual([]);
    expect(lease(at(leasedAt, VISIBILITY_MS + 1_000 - 1, -HOUR))).toEqual([]);
    expect(lease(at(leasedAt, VISIBILITY_MS + 1_000, -HOUR))).toEqual([
      expect.objectContaining({ messageId, attempts: 2 }),
    ]);
  });

  it("keeps a subscription's delivery through a leap, and redelivers it on time after a step back", () => {
    h.ok("subscription.put", { prefix: "" }, { params: { name: "s" } });
    h.ok("catalog.put", { value: 1 }, { params: { key: "a" } });
    const deliver = (options: CommandOptions) =>
      h.ok<Delivery>(
        "subscription.deliver",
        { visibilityTimeoutMs: VISIBILITY_MS },
        { ...options, params: { name: "s" } },
      );
    const first = deliver({});
    const deliveredAt = h.log.monotonicMs;
    expect(
      h.fail(
        "subscription.deliver",
        {},
        { ...at(deliveredAt, VISIBILITY_MS - 1, 3 * HOUR), params: { name: "s" } },
      ),
    ).toMatchObject({ reason: "DeliveryOutstanding" });
    const again = deliver(at(deliveredAt, VISIBILITY_MS, -HOUR));
    expect(again.deliveryId).not.toBeNull();
    expect(again.deliveryId).not.toBe(first.deliveryId);
  });
});
