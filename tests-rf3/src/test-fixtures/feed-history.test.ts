import { describe, expect, it } from "vitest";
import {
  type DeliveryAckOp,
  type DeliveryOp,
  type FeedOutcome,
  type FeedWriteOp,
  feedViolations,
} from "./feed-history.js";

const put = (
  seq: number,
  key: string,
  version: number,
  value: unknown = null,
  superseded = value === null,
) => ({
  seq,
  kind: "put",
  key,
  version,
  value,
  superseded,
});

function delivery(deliveryId: string, startMs: number, changes: DeliveryOp["changes"]): DeliveryOp {
  return { deliveryId, expiresAtMs: startMs + 100, visibilityMs: 100, changes, trimmed: false };
}

const written = (key: string, version: number): FeedOutcome => ({ status: "committed", key, version });
const acked: FeedOutcome = { status: "committed" };

function check(
  writes: FeedWriteOp[],
  deliveries: DeliveryOp[],
  acks: DeliveryAckOp[],
  outcomes: { writes: [number, FeedOutcome][]; acks: [string, FeedOutcome][] },
): string[] {
  return feedViolations(
    { writes, deliveries, acks },
    { writes: new Map(outcomes.writes), acks: new Map(outcomes.acks) },
  );
}

const twoPuts = {
  writes: [
    { n: 0, key: "k", answered: 1 },
    { n: 1, key: "k" },
  ],
  outcomes: [
    [0, written("k", 1)],
    [1, written("k", 2)],
  ] as [number, FeedOutcome][],
};

describe("feedViolations", () => {
  it("accepts a lapsed delivery taken again from the same change, and an unanswered ack that committed", () => {
    const violations = check(
      twoPuts.writes,
      [
        delivery("d1", 0, [put(1, "k", 1, 0, false)]),
        delivery("d2", 100, [put(1, "k", 1), put(2, "k", 2, 1)]),
      ],
      [
        { commandId: "a1", deliveryId: "d1", answered: "lease-lost" },
        { commandId: "a2", deliveryId: "d2" },
      ],
      {
        writes: twoPuts.outcomes,
        acks: [
          ["a1", { status: "failed", code: "LeaseLost" }],
          ["a2", acked],
        ],
      },
    );
    expect(violations).toEqual([]);
  });

  it("finds a delivery begun while another was outstanding, and a put acknowledged twice", () => {
    const violations = check(
      twoPuts.writes,
      [
        delivery("d1", 0, [put(1, "k", 1), put(2, "k", 2, 1)]),
        delivery("d2", 50, [put(1, "k", 1), put(2, "k", 2, 1)]),
      ],
      [
        { commandId: "a1", deliveryId: "d1", answered: "acked" },
        { commandId: "a2", deliveryId: "d2", answered: "acked" },
      ],
      {
        writes: twoPuts.outcomes,
        acks: [
          ["a1", acked],
          ["a2", acked],
        ],
      },
    );
    expect(violations).toEqual([
      "delivery d2 began at seq 1, within acknowledged d1",
      "change 1 was acknowledged after change 2",
      "k's version 1 was acknowledged after 2",
      "change 2 was acknowledged after change 2",
      "put k@1 (write f0) was acknowledged 2 times",
      "put k@2 (write f1) was acknowledged 2 times",
    ]);
  });

  it("finds an overlap with a lapsed delivery, a skipped put, and a change no put committed", () => {
    const violations = check(
      twoPuts.writes,
      [delivery("d1", 0, [put(1, "k", 1)]), delivery("d2", 99, [put(2, "k", 2, 1), put(3, "k", 3, 2)])],
      [{ commandId: "a2", deliveryId: "d2", answered: "acked" }],
      { writes: twoPuts.outcomes, acks: [["a2", acked]] },
    );
    expect(violations).toEqual([
      "delivery d2 carried put k@3, no committed put",
      "delivery d2 began at 99, while d1 was outstanding until 100",
      "put k@1 (write f0) was acknowledged 0 times",
    ]);
  });

  it("finds a value the put did not write, a trimmed delivery, and answers their outcomes contradict", () => {
    const violations = check(
      twoPuts.writes,
      [{ ...delivery("d1", 0, [put(1, "k", 1, 5, false), put(2, "k", 2, 1)]), trimmed: true }],
      [{ commandId: "a1", deliveryId: "d1", answered: "lease-lost" }],
      { writes: [[0, { status: "none" }], twoPuts.outcomes[1]!], acks: [["a1", acked]] },
    );
    expect(violations).toEqual([
      "write f0 was answered version 1, and its outcome is never committed",
      "ack a1 of d1 was answered LeaseLost, and its outcome is committed",
      "delivery d1 reports changes trimmed before they were read",
      "delivery d1 carried put k@1, no committed put",
    ]);
  });

  it("finds a lapsed delivery taken again from another change", () => {
    const violations = check(
      twoPuts.writes,
      [delivery("d1", 0, [put(1, "k", 1)]), delivery("d2", 100, [put(2, "k", 2, 1)])],
      [{ commandId: "a2", deliveryId: "d2", answered: "acked" }],
      { writes: twoPuts.outcomes, acks: [["a2", acked]] },
    );
    expect(violations).toContain("delivery d2 followed lapsed d1 with other changes");
  });
});
