import type { TestVoter } from "@keyload/apphost/testing";
import { type KeyLoadClient, ResourceExhaustedError } from "@keyload/client";
import { describe, expect, it } from "vitest";
import { clusterPerTest } from "./test-fixtures/cluster-per-test.js";
import { waitForMetric } from "./test-fixtures/metric-wait.js";

/**
 * The command scheduler's order, read from the log: with the leader's followers paused, one data write
 * is the active unit and nothing commits, so everything sent meanwhile waits in the leader's two lanes
 * in a known state. Once replication resumes, each command's committed index (GET /v1/commands) shows
 * the order the single apply worker took them in: control first, yet a waiting data command after at
 * most eight control commands in a row, and each lane FIFO. The order is what the scheduler selected,
 * not how fast anything was: it selects one command at a time into a unit, and a unit's entries are
 * appended in that order. The same hold shows the processing and projection effects refused by the
 * full data lane while ACKs, taken by the control reserve, commit.
 */
const startCluster = clusterPerTest();

/** Control commands queued behind the active data write: more than MaxConsecutiveControl (8). */
const CONTROLS = 11;

const HOLD_SETTINGS = {
  // Check-quorum would make the held leader step down after one election timeout, answering the
  // queued commands otherwise; the hold lasts a few seconds at most.
  KeyLoad__Raft__ElectionTimeoutMs: "5000",
  KeyLoad__Raft__ReplicationDeadlineMs: "60000",
  // The active write and the two queued behind it fill the data lane.
  KeyLoad__CommandAdmission__MaxCommands: "3",
  // One principal sends all the queued control work: the lane-wide reserve (16) is the bound here.
  KeyLoad__CommandAdmission__ControlMaxCommandsPerTenant: "16",
  KeyLoad__CommandAdmission__ControlMaxCommandsPerPrincipal: "16",
  KeyLoad__HttpAdmission__ControlMaxRequestsPerTenant: "16",
  KeyLoad__HttpAdmission__ControlMaxRequestsPerPrincipal: "16",
} as const;

function lanes(client: KeyLoadClient, leader: TestVoter) {
  const wait = (lane: "data" | "control", commands: number) =>
    waitForMetric(client, leader.httpUrl, "keyload_command_admission_commands", { lane }, commands, {
      intervalMs: 20,
      timeoutMs: 10_000,
    });
  return { data: (n: number) => wait("data", n), control: (n: number) => wait("control", n) };
}

function expectDataLaneRefusal(error: unknown, commandId: string): void {
  expect(error).toBeInstanceOf(ResourceExhaustedError);
  expect(error).toMatchObject({
    status: 429,
    reason: "CommandCount",
    governor: "command",
    lane: "data",
    commandId,
  });
}

describe("the command scheduler's order", () => {
  it("takes queued control work before waiting data, but a waiting data command after eight control commands in a row; effects use the data lane", async () => {
    const cluster = await startCluster({ env: HOLD_SETTINGS });
    const tenant = await cluster.createTenant();
    const client = cluster.client(tenant.apiKey, { adaptiveThrottle: false, requestTimeoutMs: 60_000 });
    // One attempt each: a resubmission would put a command in the log a second time, elsewhere.
    const once = cluster.client(tenant.apiKey, {
      maxAttempts: 1,
      retryResourceExhausted: false,
      adaptiveThrottle: false,
      requestTimeoutMs: 60_000,
    });
    await client.putSubscription("order-feed", "order/");
    await client.put("order/seen", { n: 0 });
    await client.enqueue("order-jobs", { job: 1 });
    await client.enqueue("order-jobs", { job: 2 });
    const lease = await client.lease("order-jobs", { max: 2, visibilityTimeoutMs: 600_000 });
    expect(lease.messages).toHaveLength(2);
    const [acked, completed] = lease.messages.map((m) => m.messageId) as [string, string];
    const token = lease.leaseToken!;
    const delivery = await client.deliver("order-feed", { max: 10 });
    const deliveryId = delivery.deliveryId!;

    const leader = await cluster.waitForLeader();
    const at = { endpoint: leader.httpUrl };
    const held = lanes(once, leader);
    const followers = cluster.voters.filter((v) => v.name !== leader.name);
    const pending = new Map<string, Promise<unknown>>();
    const track = (commandId: string, write: Promise<unknown>): void => {
      // Awaited once replication resumes; one failing meanwhile must not count as unhandled.
      write.catch(() => undefined);
      pending.set(commandId, write);
    };
    const dataIds = ["data-1", "data-2", "data-3"];
    const controlIds: string[] = [];

    // Paused followers take the appends into their socket buffers and answer nothing.
    for (const f of followers) cluster.pause(f.name);
    try {
      // data-1 is the active unit; data-2 and data-3 queue behind it, in that order.
      for (const [i, id] of dataIds.entries()) {
        track(id, once.put(`order/${id}`, { id }, { ...at, commandId: id }));
        await held.data(i + 1);
      }

      // The data lane is full: the processing and projection effects are refused by it, not taken
      // by the control reserve, which has room for all that follows.
      expectDataLaneRefusal(
        await once
          .complete("order-jobs", acked, token, { operations: [] }, { ...at, commandId: "complete-refused" })
          .catch((e: unknown) => e),
        "complete-refused",
      );
      expectDataLaneRefusal(
        await once
          .completeDelivery("order-feed", deliveryId, {}, { ...at, commandId: "project-refused" })
          .catch((e: unknown) => e),
        "project-refused",
      );

      // Control work queues behind the active data unit, after the two waiting data writes: the
      // ACKs of the message and the delivery the refused effects named, and dispatches.
      controlIds.push("ack-1", "ack-delivery-1");
      track("ack-1", once.ack("order-jobs", acked, token, { ...at, commandId: "ack-1" }));
      track(
        "ack-delivery-1",
        once.ackDelivery("order-feed", deliveryId, { ...at, commandId: "ack-delivery-1" }),
      );
      for (let i = 0; controlIds.length < CONTROLS; i++) {
        const id = `dispatch-${i}`;
        controlIds.push(id);
        track(id, once.dispatch("order-control", "rebalance", { i }, { ...at, commandId: id }));
      }
      await held.control(CONTROLS);
      // Nothing was admitted into the data lane meanwhile, and nothing has left it.
      await held.data(3);
    } finally {
      for (const f of followers) cluster.resume(f.name);
    }

    // Every held command commits on its one attempt: the leader kept office through the hold.
    const outcomes = await Promise.allSettled(pending.values());
    expect(outcomes.filter((o) => o.status === "rejected")).toEqual([]);
    const indexOf = new Map<string, number>();
    for (const id of [...dataIds, ...controlIds]) {
      const outcome = await client.getCommand(id);
      expect(outcome).toMatchObject({ commandId: id, status: "committed" });
      indexOf.set(id, outcome.index);
    }
    const byIndex = [...indexOf.keys()].sort((a, b) => indexOf.get(a)! - indexOf.get(b)!);
    // Control first: the control work overtook data-2 and data-3, which were queued before it; but
    // data-2 went after exactly eight control commands, then the rest of the control work, then data-3.
    const lanesInOrder = byIndex.map((id) => (dataIds.includes(id) ? "D" : "C")).join("");
    expect(lanesInOrder).toBe(`D${"C".repeat(8)}D${"C".repeat(CONTROLS - 8)}D`);
    // Each lane FIFO: the data writes in the order they were queued.
    expect(byIndex.filter((id) => dataIds.includes(id))).toEqual(dataIds);

    // The effects' refusals took nothing: the delivery was acknowledged by its ACK and the message
    // by its own, so completing either now finds them settled, not completed.
    expect(await client.getCommand("ack-1")).toMatchObject({ status: "committed" });
    await expect(client.getCommand("complete-refused")).rejects.toMatchObject({ code: "NotFound" });
    await expect(client.getCommand("project-refused")).rejects.toMatchObject({ code: "NotFound" });

    // A processing effect is a data-lane command: a body above the control cap (64 KiB) commits.
    const big = { pad: "x".repeat(100 * 1024) };
    const done = await client.complete("order-jobs", completed, token, {
      operations: [{ op: "put", key: "order/big-effect", value: big }],
    });
    expect(done.commandId).toBeTypeOf("string");
    expect(await client.get("order/big-effect")).toMatchObject({ value: big, version: 1 });
  });
});
