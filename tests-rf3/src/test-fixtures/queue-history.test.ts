import { describe, expect, it } from "vitest";
import {
  type AckOp,
  type EnqueueOp,
  type LeaseOp,
  type QueueOutcome,
  queueViolations,
} from "./queue-history.js";

const committed = (messageId: string): QueueOutcome => ({ status: "committed", messageId });
const leaseLost: QueueOutcome = { status: "failed", code: "LeaseLost" };

function lease(
  token: string,
  startMs: number,
  messages: [messageId: string, n: number, attempts: number][],
): LeaseOp {
  return {
    token,
    expiresAtMs: startMs + 1000,
    visibilityMs: 1000,
    messages: messages.map(([messageId, n, attempts]) => ({ messageId, n, attempts })),
  };
}

function check(
  enqueues: EnqueueOp[],
  leases: LeaseOp[],
  acks: AckOp[],
  outcomes: { enqueues: [number, QueueOutcome][]; acks: [string, QueueOutcome][] },
): string[] {
  return queueViolations(
    { enqueues, leases, acks },
    { enqueues: new Map(outcomes.enqueues), acks: new Map(outcomes.acks) },
  );
}

describe("queueViolations", () => {
  it("accepts redelivery after a lease ends, a lost lease's refusal, and an unanswered ack that committed", () => {
    const violations = check(
      [{ n: 0, answered: "5.0" }, { n: 1 }, { n: 2 }],
      [
        lease("t1", 0, [["5.0", 0, 1]]),
        lease("t2", 1000, [
          ["5.0", 0, 2],
          ["6.0", 1, 1],
        ]),
      ],
      [
        { commandId: "a1", messageId: "5.0", token: "t1", answered: "lease-lost" },
        { commandId: "a2", messageId: "5.0", token: "t2", answered: "acked" },
        { commandId: "a3", messageId: "6.0", token: "t2" },
      ],
      {
        enqueues: [
          [0, committed("5.0")],
          [1, committed("6.0")],
          [2, { status: "none" }],
        ],
        acks: [
          ["a1", leaseLost],
          ["a2", committed("5.0")],
          ["a3", committed("6.0")],
        ],
      },
    );
    expect(violations).toEqual([]);
  });

  it("finds a message leased again before its lease ended", () => {
    const violations = check(
      [{ n: 0 }],
      [lease("t1", 0, [["5.0", 0, 1]]), lease("t2", 999, [["5.0", 0, 2]])],
      [{ commandId: "a1", messageId: "5.0", token: "t2", answered: "acked" }],
      { enqueues: [[0, committed("5.0")]], acks: [["a1", committed("5.0")]] },
    );
    expect(violations).toEqual([
      "message 5.0's attempt 2 was leased at 999, before attempt 1's lease ended at 1000",
    ]);
  });

  it("finds a message acknowledged twice, one never acknowledged, and one acknowledged but never enqueued", () => {
    const violations = check(
      [{ n: 0 }, { n: 1 }],
      [],
      [
        { commandId: "a1", messageId: "5.0", token: "t1" },
        { commandId: "a2", messageId: "5.0", token: "t2" },
        { commandId: "a3", messageId: "9.0", token: "t3" },
      ],
      {
        enqueues: [
          [0, committed("5.0")],
          [1, committed("6.0")],
        ],
        acks: [
          ["a1", committed("5.0")],
          ["a2", committed("5.0")],
          ["a3", committed("9.0")],
        ],
      },
    );
    expect(violations).toEqual([
      "message 5.0 (enqueue 0) was acknowledged by 2 acks: a1, a2",
      "message 6.0 (enqueue 1) was acknowledged by 0 acks: ",
      "message 9.0 was acknowledged and never enqueued",
    ]);
  });

  it("finds answers their outcomes contradict, and two enqueues making one message", () => {
    const violations = check(
      [{ n: 0, answered: "5.0" }, { n: 1 }],
      [lease("t1", 0, [["5.0", 1, 1]])],
      [
        { commandId: "a1", messageId: "5.0", token: "t1", answered: "lease-lost" },
        { commandId: "a2", messageId: "5.0", token: "t1", answered: "acked" },
      ],
      {
        enqueues: [
          [0, { status: "none" }],
          [1, committed("5.0")],
        ],
        acks: [
          ["a1", committed("5.0")],
          ["a2", leaseLost],
        ],
      },
    );
    expect(violations).toEqual([
      "enqueue 0 was answered message 5.0, and its outcome is never committed",
      "ack a1 of 5.0 was answered LeaseLost, and its outcome is committed for message 5.0",
      "ack a2 of 5.0 was answered, and its outcome is failed (LeaseLost)",
    ]);
  });

  it("finds a lease delivering a message as another enqueue's", () => {
    const violations = check(
      [{ n: 0 }, { n: 1 }],
      [lease("t1", 0, [["5.0", 1, 1]])],
      [{ commandId: "a1", messageId: "5.0", token: "t1", answered: "acked" }],
      {
        enqueues: [
          [0, committed("5.0")],
          [1, committed("6.0")],
        ],
        acks: [["a1", committed("5.0")]],
      },
    );
    expect(violations).toContain("a lease delivered message 5.0 as enqueue 1, which made 0");
  });
});
