import { setTimeout as sleep } from "node:timers/promises";
import type { TestCluster } from "@keyload/apphost/testing";
import { type DeliveryResult, FailedPreconditionError, type KeyLoadClient } from "@keyload/client";
import { expect } from "vitest";
import { durableOutcome, FaultWorkload, type FaultWorkloadOptions, mapLimit } from "./fault-workload.js";
import {
  type DeliveryAckOp,
  type DeliveryOp,
  type FeedOutcome,
  type FeedWriteOp,
  feedViolations,
} from "./feed-history.js";
import { SeededRandom } from "./seeded-random.js";

const SUBSCRIPTION = "projector";
const PREFIX = "feed/";
/** Keys the writers put to, so that later puts supersede earlier ones. */
const KEYS = 8;
/** Short deliveries, so abandoned ones lapse and are delivered again while the faults go on. */
const VISIBILITY_MS = 1000;
/**
 * Out of ten deliveries a consumer takes, it abandons one and acknowledges one only once it has lapsed
 * (LeaseLost, the changes delivered again), and acknowledges the rest at once.
 */
const ABANDONED = 0;
const LATE = 1;

export interface FeedWorkloadOptions extends FaultWorkloadOptions {
  readonly writers: number;
  /** Consumers competing for the subscription's one outstanding delivery. */
  readonly consumers: number;
}

/**
 * A subscription over documents written through every voter while a test injects faults, its
 * deliveries taken and acknowledged through every voter, and the checks of feed-history.ts once the
 * faults stop and the subscription is drained.
 */
export class FeedWorkload extends FaultWorkload {
  private readonly writes: FeedWriteOp[] = [];
  private readonly deliveries: DeliveryOp[] = [];
  private readonly acks: DeliveryAckOp[] = [];

  constructor(cluster: TestCluster, options: FeedWorkloadOptions) {
    super(cluster, options);
    this.start([
      ...Array.from({ length: options.writers }, (_, w) => this.write(w)),
      ...Array.from({ length: options.consumers }, (_, c) => this.consume(c)),
    ]);
  }

  /** Creates the subscription, then runs the workload while `faults` runs, drains it and checks. */
  static async run(
    cluster: TestCluster,
    options: FeedWorkloadOptions,
    faults: () => Promise<void>,
  ): Promise<void> {
    await cluster.client(cluster.adminKey, { adaptiveThrottle: false }).putSubscription(SUBSCRIPTION, PREFIX);
    return FaultWorkload.around(new FeedWorkload(cluster, options), faults);
  }

  async verify(): Promise<void> {
    const drainer = this.cluster.client(this.cluster.adminKey, { adaptiveThrottle: false });
    await this.drain(async () => {
      let delivery: DeliveryResult;
      try {
        delivery = await drainer.deliver(
          SUBSCRIPTION,
          { max: 256, visibilityTimeoutMs: 60_000 },
          { commandId: this.commandId("d") },
        );
      } catch (error) {
        // One taken during the faults is still outstanding.
        if (!(error instanceof FailedPreconditionError)) throw error;
        await sleep(200);
        return true;
      }
      const taken = this.record(delivery, 60_000);
      if (taken === undefined) return false;
      const op: DeliveryAckOp = { commandId: this.commandId("a"), deliveryId: taken.deliveryId };
      this.acks.push(op);
      await drainer.ackDelivery(SUBSCRIPTION, taken.deliveryId, { commandId: op.commandId });
      op.answered = "acked";
      return true;
    }, VISIBILITY_MS + 200);
    expect(this.writes.some((op) => op.answered !== undefined)).toBe(true);
    expect(this.acks.some((op) => op.answered === "acked")).toBe(true);
    // Below the shipped limit of eight HTTP requests in flight per principal.
    const writes = await mapLimit(
      this.writes,
      6,
      async (op) => [op.n, await outcomeOf(drainer, `f${op.n}`)] as const,
    );
    const acks = await mapLimit(
      this.acks,
      6,
      async (op) => [op.commandId, await outcomeOf(drainer, op.commandId)] as const,
    );
    const history = { writes: this.writes, deliveries: this.deliveries, acks: this.acks };
    const violations = feedViolations(history, { writes: new Map(writes), acks: new Map(acks) });
    expect(violations, `the subscription broke its promises:\n${violations.join("\n")}`).toEqual([]);
  }

  private async write(w: number): Promise<void> {
    const random = new SeededRandom(6000 + w);
    while (this.running) {
      const op: FeedWriteOp = { n: this.writes.length, key: `${PREFIX}${random.nextInt(KEYS)}` };
      this.writes.push(op);
      const result = await this.command(random, `write f${op.n}`, (endpoint) =>
        this.client.put(op.key, op.n, { commandId: `f${op.n}`, endpoint }),
      );
      if (result !== undefined) op.answered = result.version;
      // Writers pace themselves, so deliveries keep up and are taken again and again.
      await sleep(10);
    }
  }

  private async consume(c: number): Promise<void> {
    const random = new SeededRandom(7000 + c);
    while (this.running) {
      const commandId = this.commandId("d");
      const delivery = await this.command<DeliveryResult | "busy">(
        random,
        `delivery ${commandId}`,
        (endpoint) =>
          this.client.deliver(
            SUBSCRIPTION,
            { max: 8, visibilityTimeoutMs: VISIBILITY_MS },
            { commandId, endpoint },
          ),
        // Another consumer holds the outstanding delivery.
        (error) => (error instanceof FailedPreconditionError ? "busy" : undefined),
      );
      const taken =
        delivery === undefined || delivery === "busy" ? undefined : this.record(delivery, VISIBILITY_MS);
      const fate = random.nextInt(10);
      if (taken === undefined || fate === ABANDONED) {
        await sleep(20);
        continue;
      }
      if (fate === LATE) await sleep(VISIBILITY_MS + 100);
      const op: DeliveryAckOp = { commandId: this.commandId("a"), deliveryId: taken.deliveryId };
      this.acks.push(op);
      op.answered = await this.acknowledge(random, `ack ${op.commandId}`, (endpoint) =>
        this.client.ackDelivery(SUBSCRIPTION, taken.deliveryId, { commandId: op.commandId, endpoint }),
      );
    }
  }

  /** Records a delivery that carried changes, and returns it; undefined when it carried none. */
  private record(delivery: DeliveryResult, visibilityMs: number): DeliveryOp | undefined {
    if (delivery.deliveryId === null || delivery.leaseExpiresAtMs === null) return undefined;
    const op: DeliveryOp = {
      deliveryId: delivery.deliveryId,
      expiresAtMs: delivery.leaseExpiresAtMs,
      visibilityMs,
      changes: delivery.changes,
      trimmed: delivery.trimmed !== null,
    };
    this.deliveries.push(op);
    return op;
  }
}

/** What a command's durable outcome says of the version it wrote, if any. */
async function outcomeOf(client: KeyLoadClient, commandId: string): Promise<FeedOutcome> {
  const outcome = await durableOutcome(client, commandId);
  if (outcome.status !== "committed") return outcome;
  const { key, version } = outcome.result as { key?: string; version?: number };
  return {
    status: "committed",
    ...(key === undefined ? {} : { key }),
    ...(version === undefined ? {} : { version }),
  };
}
