import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Delivery } from "./subscriptions.js";
import { Harness, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s", { maxLeaseBatch: 10, maxLeaseBytes: 100, maxSubscriptionScan: 50 }));
});
afterEach(() => temp.cleanup());

const put = (key: string, value: unknown, tenant = "t1") =>
  h.ok("catalog.put", { value }, { params: { key }, tenant });
const subscribe = (name: string, body: Record<string, unknown>) =>
  h.ok("subscription.put", body, { params: { name } });
const deliver = (name: string, body: Record<string, unknown> = {}) =>
  h.ok<Delivery>("subscription.deliver", body, { params: { name } });
const ack = (name: string, deliveryId: string) =>
  h.run("subscription.ack", "", { params: { name, deliveryId } });
const summary = (delivery: Delivery) => delivery.changes.map((c) => `${c.seq}:${c.kind}:${c.key}`);

describe("subscriptions", () => {
  it("holds at most maxLeaseBytes of documents and edges in a delivery, and always the first change", () => {
    subscribe("docs", { prefix: "d/" });
    // Each document is stored as 42 bytes of JSON: two fit in 100, a third does not.
    for (const key of ["d/1", "d/2", "d/3"]) put(key, "x".repeat(40));
    h.ok("catalog.delete", "", { params: { key: "d/1" } });
    put("d/4", "y".repeat(500));
    h.ok("graph.putEdge", { from: "d/5", type: "t", to: "d/6" });
    const first = deliver("docs");
    // A superseded put holds no document, so it costs nothing.
    expect(summary(first)).toEqual(["1:put:d/1", "2:put:d/2", "3:put:d/3", "4:delete:d/1"]);
    ack("docs", first.deliveryId!);
    const second = deliver("docs");
    expect(summary(second)).toEqual(["5:put:d/4"]);
    ack("docs", second.deliveryId!);
    expect(summary(deliver("docs"))).toEqual(["6:edge.put:d/5"]);
  });

  it("delivers the tenant's changes under a prefix in order, and ack moves the cursor", () => {
    expect(subscribe("orders", { prefix: "orders/" })).toEqual({
      name: "orders",
      prefix: "orders/",
      cursor: 0,
      created: true,
    });
    put("orders/1", { n: 1 });
    put("users/1", { n: 2 });
    put("orders/2", { n: 3 });
    put("orders/3", "elsewhere", "t2");
    h.ok("catalog.delete", "", { params: { key: "orders/1" } });
    h.ok("graph.putEdge", { from: "orders/2", type: "for", to: "users/1" });
    const first = deliver("orders", { max: 2 });
    expect(summary(first)).toEqual(["1:put:orders/1", "3:put:orders/2"]);
    expect(first.deliveryId).toMatch(/^[0-9a-f]{32}$/);
    // The first put's version was superseded by the delete: the delete follows in the feed.
    expect(first.changes[0]).toMatchObject({ version: 1, value: null, superseded: true });
    expect(first.changes[1]).toMatchObject({ version: 1, value: { n: 3 }, superseded: false });
    expect(ack("orders", first.deliveryId!)).toMatchObject({
      outcome: { status: "committed", result: { cursor: 3 } },
    });
    const second = deliver("orders");
    expect(summary(second)).toEqual(["4:delete:orders/1", "5:edge.put:orders/2"]);
    expect(second.changes[1]!.value).toEqual({ from: "orders/2", type: "for", to: "users/1" });
    expect(second.cursor).toBe(3);
    ack("orders", second.deliveryId!);
    expect(deliver("orders")).toEqual({
      name: "orders",
      deliveryId: null,
      leaseExpiresAtMs: null,
      changes: [],
      cursor: 5,
      trimmed: null,
    });
  });

  it("starts at the end of the feed when asked, and keeps the cursor when the prefix changes", () => {
    put("a", 1);
    put("b", 2);
    subscribe("late", { prefix: "", from: "end" });
    put("c", 3);
    expect(summary(deliver("late"))).toEqual(["3:put:c"]);
    expect(subscribe("late", { prefix: "d" })).toMatchObject({ cursor: 2, created: false });
    put("d", 4);
    expect(summary(deliver("late"))).toEqual(["4:put:d"]);
  });

  it("allows one outstanding delivery and redelivers it under a new ID once expired", () => {
    subscribe("s", { prefix: "" });
    put("a", 1);
    const first = deliver("s", { visibilityTimeoutMs: 1_000 });
    expect(h.fail("subscription.deliver", {}, { params: { name: "s" } })).toMatchObject({
      code: "FailedPrecondition",
      reason: "DeliveryOutstanding",
    });
    h.advance(1_000);
    expect(ack("s", first.deliveryId!)).toMatchObject({
      outcome: { status: "failed", error: { code: "LeaseLost", reason: "LeaseExpired" } },
    });
    const again = deliver("s");
    expect(summary(again)).toEqual(summary(first));
    expect(again.deliveryId).not.toBe(first.deliveryId);
    expect(ack("s", first.deliveryId!)).toMatchObject({
      outcome: { error: { reason: "DeliveryNotOutstanding" } },
    });
    expect(ack("s", again.deliveryId!)).toMatchObject({ outcome: { status: "committed" } });
  });

  it("scans a bounded window, moving past changes that do not match without leasing them", () => {
    subscribe("rare", { prefix: "rare/" });
    for (let i = 0; i < 120; i++) put(`common/${i}`, i);
    put("rare/1", "found");
    expect(deliver("rare")).toMatchObject({ deliveryId: null, changes: [], cursor: 50 });
    expect(deliver("rare")).toMatchObject({ deliveryId: null, cursor: 100 });
    expect(summary(deliver("rare"))).toEqual(["121:put:rare/1"]);
  });

  it("completes a delivery with writes atomically: a projection", () => {
    subscribe("proj", { prefix: "orders/" });
    put("orders/1", { total: 5 });
    const delivery = deliver("proj");
    const body = { operations: [{ op: "put", key: "views/total", value: 5, expectedVersion: 0 }] };
    const refused = h.fail(
      "subscription.complete",
      { operations: [{ op: "check", key: "views/total", version: 1 }] },
      {
        params: { name: "proj", deliveryId: delivery.deliveryId! },
      },
    );
    expect(refused.code).toBe("FailedPrecondition");
    expect(
      h.ok("subscription.complete", body, { params: { name: "proj", deliveryId: delivery.deliveryId! } }),
    ).toMatchObject({
      cursor: 1,
      results: [{ op: "put", key: "views/total", version: 1 }],
    });
    expect(h.sm.getDocument("t1", "views/total")?.value).toBe(5);
    expect(
      h.fail("subscription.complete", body, { params: { name: "proj", deliveryId: delivery.deliveryId! } }),
    ).toMatchObject({
      code: "LeaseLost",
    });
  });

  it("refuses unknown subscriptions and bad bodies", () => {
    expect(h.fail("subscription.deliver", {}, { params: { name: "nope" } })).toMatchObject({
      code: "NotFound",
      reason: "SubscriptionNotFound",
    });
    expect(h.fail("subscription.ack", "", { params: { name: "nope", deliveryId: "d" } })).toMatchObject({
      code: "NotFound",
    });
    for (const body of [
      {},
      { prefix: 1 },
      { prefix: "a", from: "middle" },
      { prefix: "x".repeat(513) },
      "[",
    ]) {
      expect(h.fail("subscription.put", body, { params: { name: "s" } })).toMatchObject({
        code: "InvalidArgument",
      });
    }
    subscribe("s", { prefix: "" });
    for (const body of [{ max: 0 }, { max: 11 }, { visibilityTimeoutMs: -1 }]) {
      expect(h.fail("subscription.deliver", body, { params: { name: "s" } })).toMatchObject({
        code: "InvalidArgument",
      });
    }
  });
});
