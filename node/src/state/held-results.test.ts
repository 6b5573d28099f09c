import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { LeaseResult } from "./queues.js";
import type { Delivery } from "./subscriptions.js";
import { committed, Harness, outcomeOf, TempStates } from "./test-fixtures/state-fixtures.js";

let temp: TempStates;
let h: Harness;
beforeEach(() => {
  temp = new TempStates();
  h = new Harness(temp.create("s", { maxDeliveryAttempts: 2 }));
});
afterEach(() => temp.cleanup());

const BIG = "b".repeat(100_000);
const queue = { params: { queue: "jobs" } };
const onMessage = (messageId: string, queueName = "jobs") => ({ params: { queue: queueName, messageId } });
const lease = (commandId: string, visibilityTimeoutMs = 1_000) =>
  h.run("queue.lease", { max: 2, visibilityTimeoutMs }, { ...queue, commandId });
/** The bytes of the command_outcomes table as the dump writes it. */
const outcomeBytes = () => /# command_outcomes[^#]*/.exec(h.sm.dump())?.[0].length ?? 0;

describe("a lease's outcome", () => {
  it("names its messages' bodies instead of copying them, and answers a retry with them", () => {
    h.ok("queue.enqueue", { body: { text: BIG } }, queue);
    h.ok("queue.enqueue", { body: [1, "two"] }, queue);
    const before = outcomeBytes();
    const first = lease("lease-1");
    const granted = committed<LeaseResult>(first);
    expect(granted.messages.map((m) => m.body)).toEqual([{ text: BIG }, [1, "two"]]);
    expect(outcomeBytes() - before).toBeLessThan(1_000);

    const retry = lease("lease-1");
    expect(retry).toMatchObject({ duplicate: true });
    // The same answer, down to the order of its keys.
    expect(JSON.stringify(committed(retry))).toBe(JSON.stringify(granted));
    expect(JSON.stringify(h.sm.commandOutcome("t1", "lease-1"))).toBe(
      JSON.stringify({ commandId: "lease-1", status: "committed", index: first.entryIndex, result: granted }),
    );
  });

  it("does not grow by the message's size each time it is leased again", () => {
    h = new Harness(temp.create("many-attempts", { maxDeliveryAttempts: 50 }));
    h.ok("queue.enqueue", { body: BIG }, queue);
    const before = outcomeBytes();
    for (let n = 0; n < 20; n++) {
      // Nacked at once, so that it is visible again.
      const { leaseToken, messages } = committed<LeaseResult>(lease(`lease-${n}`));
      h.ok("queue.nack", { leaseToken }, onMessage(messages[0]!.messageId));
    }
    expect(outcomeBytes() - before).toBeLessThan(20 * 2_000);
  });

  it("is rebuilt from the dead-letter queue once its message has moved there", () => {
    h.ok("queue.enqueue", { body: BIG }, queue);
    const granted = committed<LeaseResult>(lease("lease-1"));
    h.advance(2_000);
    committed(lease("lease-2"));
    h.advance(2_000);
    // The third lease finds the attempts spent: the message is a dead letter.
    expect(committed<LeaseResult>(lease("lease-3")).messages).toEqual([]);
    expect(committed(lease("lease-1"))).toEqual(granted);
  });

  it("reads as expired once one of its messages is gone: a retry is refused, never applied again", () => {
    const { messageId } = h.ok<{ messageId: string }>("queue.enqueue", { body: BIG }, queue);
    h.ok("queue.enqueue", { body: "left" }, queue);
    const first = lease("lease-1");
    const { leaseToken } = committed<LeaseResult>(first);
    h.ok("queue.ack", { leaseToken }, onMessage(messageId));

    expect(outcomeOf(lease("lease-1"))).toEqual({
      status: "failed",
      index: first.entryIndex,
      error: expect.objectContaining({ code: "CommandIdConflict", reason: "OutcomeExpired" }),
    });
    expect(h.sm.commandOutcome("t1", "lease-1")).toEqual({
      commandId: "lease-1",
      status: "expired",
      index: first.entryIndex,
      failed: false,
      errorCode: null,
    });
    // The other message is still leased under the first token: the retry leased nothing.
    expect(h.ok("queue.renew", { leaseToken }, onMessage(`${first.entryIndex - 1}.0`))).toMatchObject({
      messageId: `${first.entryIndex - 1}.0`,
    });
  });
});

describe("a delivery's outcome", () => {
  const subscription = { params: { name: "docs" } };
  const deliver = (commandId: string) => h.run("subscription.deliver", {}, { ...subscription, commandId });

  beforeEach(() => {
    h.ok("subscription.put", { prefix: "d/" }, subscription);
    h.ok("catalog.put", { value: { text: BIG } }, { params: { key: "d/1" } });
    h.ok("catalog.put", { value: "small" }, { params: { key: "d/2" } });
    h.ok("catalog.delete", "", { params: { key: "d/2" } });
    h.ok("graph.putEdge", { from: "d/3", type: "t", to: "d/4" });
  });

  it("names its documents instead of copying them, and answers a retry with them", () => {
    const before = outcomeBytes();
    const first = deliver("delivery-1");
    const delivered = committed<Delivery>(first);
    expect(delivered.changes.map((c) => [c.kind, c.value])).toEqual([
      ["put", { text: BIG }],
      ["put", null],
      ["delete", null],
      ["edge.put", { from: "d/3", type: "t", to: "d/4" }],
    ]);
    expect(outcomeBytes() - before).toBeLessThan(2_000);
    expect(JSON.stringify(committed(deliver("delivery-1")))).toBe(JSON.stringify(delivered));
  });

  it("reads as expired once a document it carried has a later version", () => {
    const first = deliver("delivery-1");
    h.ok("catalog.put", { value: "newer" }, { params: { key: "d/1" } });
    expect(outcomeOf(deliver("delivery-1"))).toMatchObject({
      status: "failed",
      index: first.entryIndex,
      error: { code: "CommandIdConflict", reason: "OutcomeExpired" },
    });
  });
});
