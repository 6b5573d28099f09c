import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import type { KeyLoadClient, LeaseResult } from "@keyload/client";
import { expect } from "vitest";
import { durableOutcome, FaultWorkload, type FaultWorkloadOptions, mapLimit } from "./fault-workload.js";
import {
  type AckOp,
  type EnqueueOp,
  type LeaseOp,
  type QueueHistory,
  type QueueOutcome,
  queueViolations,
} from "./queue-history.js";
import { SeededRandom } from "./seeded-random.js";

/** Short leases, so abandoned ones expire and are delivered again while the faults go on. */
const VISIBILITY_MS = 1500;
/** How often a consumer abandons a message rather than acknowledging it. */
const ABANDON_ONE_IN = 6;
const QUEUE = "jobs";

export interface QueueWorkloadOptions extends FaultWorkloadOptions {
  readonly producers: number;
  readonly consumers: number;
}

/**
 * A work queue fed and drained through every voter while a test injects faults, and the checks of
 * queue-history.ts once the faults stop and the queue is drained: every message enqueued is
 * acknowledged exactly once, its leases never overlap, and every answer is its command's outcome.
 */
export class QueueWorkload extends FaultWorkload {
  private readonly enqueues: EnqueueOp[] = [];
  private readonly leases: LeaseOp[] = [];
  private readonly acks: AckOp[] = [];

  constructor(cluster: TestCluster, options: QueueWorkloadOptions) {
    super(cluster, options);
    this.start([
      ...Array.from({ length: options.producers }, (_, p) => this.produce(p)),
      ...Array.from({ length: options.consumers }, (_, c) => this.consume(c)),
    ]);
  }

  static run(
    cluster: TestCluster,
    options: QueueWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    return FaultWorkload.around(new QueueWorkload(cluster, options), faults);
  }

  /** Acknowledges whatever is left in the queue and its dead-letter queue, then makes every check. */
  async verify(): Promise<void> {
    const drainer = this.cluster.client(this.cluster.adminKey, { adaptiveThrottle: false });
    for (const queue of [QUEUE, `${QUEUE}.dead-letter`]) {
      await this.drain(async () => {
        const commandId = this.commandId("l");
        const lease = await drainer.lease<{ n: number }>(
          queue,
          { max: 16, visibilityTimeoutMs: 60_000 },
          { commandId },
        );
        this.record(lease, 60_000);
        for (const message of lease.messages) {
          const op: AckOp = {
            commandId: this.commandId("a"),
            messageId: message.messageId,
            token: lease.leaseToken!,
          };
          this.acks.push(op);
          await drainer.ack(queue, message.messageId, op.token, { commandId: op.commandId });
          op.answered = "acked";
        }
        return lease.messages.length > 0;
      }, VISIBILITY_MS + 200);
    }
    expect(this.enqueues.some((op) => op.answered !== undefined)).toBe(true);
    expect(this.acks.some((op) => op.answered === "acked")).toBe(true);
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const enqueues = await mapLimit(
      this.enqueues,
      6,
      async (op) => [op.n, await outcomeOf(drainer, `e${op.n}`)] as const,
    );
    const acks = await mapLimit(
      this.acks,
      6,
      async (op) => [op.commandId, await outcomeOf(drainer, op.commandId)] as const,
    );
    const history: QueueHistory = { enqueues: this.enqueues, leases: this.leases, acks: this.acks };
    const violations = queueViolations(history, { enqueues: new Map(enqueues), acks: new Map(acks) });
    expect(violations, `the queue broke its promises:\n${violations.join("\n")}`).toEqual([]);
  }

  private async produce(p: number): Promise<void> {
    const random = new SeededRandom(2000 + p);
    while (this.running) {
      const op: EnqueueOp = { n: this.enqueues.length };
      this.enqueues.push(op);
      const commandId = `e${op.n}`;
      const result = await this.command(random, `enqueue ${commandId}`, (endpoint) =>
        this.client.enqueue(QUEUE, { n: op.n }, { commandId, endpoint }),
      );
      if (result !== undefined) op.answered = result.messageId;
      // Producers pace themselves, so the consumers keep up and messages are leased again and again.
      await sleep(10);
    }
  }

  private async consume(c: number): Promise<void> {
    const random = new SeededRandom(3000 + c);
    while (this.running) {
      const commandId = this.commandId("l");
      const lease = await this.command(random, `lease ${commandId}`, (endpoint) =>
        this.client.lease<{ n: number }>(
          QUEUE,
          { max: 4, visibilityTimeoutMs: VISIBILITY_MS },
          { commandId, endpoint },
        ),
      );
      if (lease === undefined) continue;
      this.record(lease, VISIBILITY_MS);
      if (lease.leaseToken === null) {
        await sleep(20);
        continue;
      }
      for (const message of lease.messages) {
        if (random.nextInt(ABANDON_ONE_IN) === 0) continue;
        const op: AckOp = {
          commandId: this.commandId("a"),
          messageId: message.messageId,
          token: lease.leaseToken,
        };
        this.acks.push(op);
        op.answered = await this.acknowledge(random, `ack ${op.commandId}`, (endpoint) =>
          this.client.ack(QUEUE, message.messageId, op.token, { commandId: op.commandId, endpoint }),
        );
      }
    }
  }

  private record(lease: LeaseResult<{ n: number }>, visibilityMs: number): void {
    if (lease.leaseToken === null || lease.leaseExpiresAtMs === null) return;
    this.leases.push({
      token: lease.leaseToken,
      expiresAtMs: lease.leaseExpiresAtMs,
      visibilityMs,
      messages: lease.messages.map((m) => ({ messageId: m.messageId, n: m.body.n, attempts: m.attempts })),
    });
  }
}

/** What a command's durable outcome says of the message it names. */
async function outcomeOf(client: KeyLoadClient, commandId: string): Promise<QueueOutcome> {
  const outcome = await durableOutcome(client, commandId);
  if (outcome.status !== "committed") return outcome;
  return { status: "committed", messageId: (outcome.result as { messageId: string }).messageId };
}
