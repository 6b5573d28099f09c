/**
 * The endurance run's load: a steady mix of requests at a fixed rate, open loop (a slot is taken every
 * 1/rate s whether or not earlier requests have answered), through the typed client, so that 429s are
 * retried as an application would. Each slot sends one request: a step some earlier answer asked for
 * (the ack or nack of a leased message, the ack of a subscription delivery) if one waits, else a fresh
 * operation drawn from the mix: catalog puts and deletes over a bounded key space, bulk reads,
 * transactions with an outbox message, enqueues, leases, subscription deliveries, dispatch appends and
 * reads. One message in ten is poison: it is nacked on every lease until its attempts are spent and it
 * moves to the dead-letter queue. Keys are never in two requests at once, so that every delete finds a
 * live document and no answer but a refusal is expected.
 */
import { randomBytes } from "node:crypto";
import { KeyLoadClient, ResourceExhaustedError } from "@keyload/client";

export const OPERATIONS = [
  "put",
  "delete",
  "bulkGet",
  "transaction",
  "enqueue",
  "lease",
  "deliver",
  "dispatch",
  "readDispatch",
] as const;
export type ChurnOperation = (typeof OPERATIONS)[number];
/** Steps that follow an answer, sent before any fresh operation. */
type FollowUp = "ack" | "nack" | "ackDelivery";
type RequestKind = ChurnOperation | FollowUp;

export const DEFAULT_MIX: Readonly<Record<ChurnOperation, number>> = {
  put: 30,
  delete: 10,
  bulkGet: 5,
  transaction: 10,
  enqueue: 10,
  lease: 12,
  deliver: 8,
  dispatch: 10,
  readDispatch: 5,
};

export interface ChurnOptions {
  readonly endpoints: readonly string[];
  /** One API key per principal, all of one tenant; requests take them in turn. */
  readonly apiKeys: readonly string[];
  /** Requests per second. */
  readonly rate: number;
  readonly keys: number;
  readonly valueBytes: number;
  readonly mix: Readonly<Record<ChurnOperation, number>>;
  /** Requests past this many unanswered are not sent: the slot counts as missed. */
  readonly maxInFlight: number;
}

export interface ChurnCounts {
  /** Slots due since the start. */
  readonly scheduled: number;
  readonly sent: number;
  /** Slots not sent because `maxInFlight` requests were unanswered. */
  readonly missed: number;
  readonly ok: number;
  /** Answers that stayed 429 after the client's retries. */
  readonly refused: number;
  readonly errors: number;
  readonly byKind: Readonly<Record<string, number>>;
  readonly errorSamples: readonly string[];
}

const QUEUE = "endurance-work";
const SUBSCRIPTION = "endurance-changes";
const PREFIX = "cat/";
const CHANNELS = 4;
const LEASE_MAX = 8;
const DELIVERY_MAX = 64;
const VISIBILITY_MS = 30_000;
/** Tries to find a key in the wanted state before the slot takes another operation. */
const KEY_PROBES = 8;

interface Leased {
  readonly messageId: string;
  readonly leaseToken: string;
  readonly poison: boolean;
}

export class Churn {
  private readonly clients: KeyLoadClient[];
  private readonly value: string;
  /** Per key: believed to hold a live document. */
  private readonly live: Uint8Array;
  /** Per key: in a request now. */
  private readonly busy: Uint8Array;
  private readonly followUps: (() => Promise<void>)[] = [];
  private readonly dispatchSeq = new Array<number>(CHANNELS).fill(0);
  private readonly mixTotal: number;
  private deliveryOutstanding = false;
  /** After a failed delivery ack, no delivery is asked for until the unacked one has expired. */
  private deliveryBlockedUntil = 0;
  private seq = 0;
  private inFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private started = 0;
  private readonly settled = new Set<Promise<void>>();
  private counts = {
    scheduled: 0,
    sent: 0,
    missed: 0,
    ok: 0,
    refused: 0,
    errors: 0,
    byKind: {} as Record<string, number>,
    errorSamples: [] as string[],
  };

  constructor(private readonly options: ChurnOptions) {
    this.clients = options.apiKeys.map(
      (apiKey) => new KeyLoadClient({ endpoints: options.endpoints, apiKey, connections: 8 }),
    );
    this.value = randomBytes(options.valueBytes).toString("base64").slice(0, options.valueBytes);
    this.live = new Uint8Array(options.keys);
    this.busy = new Uint8Array(options.keys);
    this.mixTotal = OPERATIONS.reduce((sum, op) => sum + options.mix[op], 0);
    if (this.mixTotal <= 0) throw new Error("the operation mix has no weight");
  }

  /** Creates the subscription the deliveries read, at the feed's end. */
  async prepare(): Promise<void> {
    await this.client().putSubscription(SUBSCRIPTION, PREFIX, { from: "end" });
  }

  start(): void {
    this.started = performance.now();
    // A coarse tick sends the slots due since the last one, so the rate holds whatever the timer's jitter.
    this.timer = setInterval(() => this.tick(), 10);
  }

  /** Stops taking slots and waits for the requests still out. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.settled]);
    await Promise.allSettled(this.clients.map((c) => c.close()));
  }

  /** The counts so far (a copy). */
  snapshot(): ChurnCounts {
    const c = this.counts;
    return { ...c, byKind: { ...c.byKind }, errorSamples: [...c.errorSamples] };
  }

  private tick(): void {
    const due = Math.floor(((performance.now() - this.started) / 1000) * this.options.rate);
    while (this.counts.scheduled < due) {
      this.counts.scheduled++;
      if (this.inFlight >= this.options.maxInFlight) {
        this.counts.missed++;
        continue;
      }
      this.send();
    }
  }

  private send(): void {
    const followUp = this.followUps.shift();
    const request = followUp ?? this.fresh();
    this.counts.sent++;
    this.inFlight++;
    const settled = request().finally(() => {
      this.inFlight--;
      this.settled.delete(settled);
    });
    this.settled.add(settled);
  }

  private client(): KeyLoadClient {
    return this.clients[this.seq++ % this.clients.length]!;
  }

  /** Runs one request of `kind`, counting its answer. */
  private async run(kind: RequestKind, call: () => Promise<void>): Promise<void> {
    this.counts.byKind[kind] = (this.counts.byKind[kind] ?? 0) + 1;
    try {
      await call();
      this.counts.ok++;
    } catch (err) {
      if (err instanceof ResourceExhaustedError) {
        this.counts.refused++;
        return;
      }
      this.counts.errors++;
      if (this.counts.errorSamples.length < 5) {
        this.counts.errorSamples.push(`${kind}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }

  private pick(): ChurnOperation {
    let r = Math.random() * this.mixTotal;
    for (const op of OPERATIONS) {
      r -= this.options.mix[op];
      if (r < 0) return op;
    }
    return "put";
  }

  private fresh(): () => Promise<void> {
    const op = this.pick();
    switch (op) {
      case "put":
        return this.put();
      case "delete":
        return this.delete() ?? this.put();
      case "bulkGet":
        return this.bulkGet();
      case "transaction":
        return this.transaction();
      case "enqueue":
        return () => this.run("enqueue", () => this.enqueue());
      case "lease":
        return () => this.run("lease", () => this.lease());
      case "deliver":
        return this.deliver() ?? this.readDispatch();
      case "dispatch":
        return this.dispatch();
      case "readDispatch":
        return this.readDispatch();
    }
  }

  /** A key in the wanted state and in no request, marked busy; undefined if none was found quickly. */
  private takeKey(live: boolean): number | undefined {
    for (let i = 0; i < KEY_PROBES; i++) {
      const k = Math.floor(Math.random() * this.options.keys);
      if (this.busy[k] === 0 && (this.live[k] === 1) === live) {
        this.busy[k] = 1;
        return k;
      }
    }
    return undefined;
  }

  private keyName(k: number): string {
    return `${PREFIX}k${k}`;
  }

  /** Runs `call` holding `keys`, then records their liveness as `liveAfter` if it succeeded. */
  private withKeys(
    kind: ChurnOperation,
    keys: readonly { readonly k: number; readonly liveAfter: boolean }[],
    call: () => Promise<void>,
  ): () => Promise<void> {
    return () =>
      this.run(kind, async () => {
        try {
          await call();
          for (const { k, liveAfter } of keys) this.live[k] = liveAfter ? 1 : 0;
        } finally {
          for (const { k } of keys) this.busy[k] = 0;
        }
      });
  }

  private put(): () => Promise<void> {
    // Any key not in a request: a put over a live one is an update, over a dead one a revival.
    const k = this.takeKey(true) ?? this.takeKey(false);
    if (k === undefined) return this.readDispatch();
    const n = this.seq;
    return this.withKeys("put", [{ k, liveAfter: true }], async () => {
      await this.client().put(this.keyName(k), { n, pad: this.value });
    });
  }

  private delete(): (() => Promise<void>) | undefined {
    const k = this.takeKey(true);
    if (k === undefined) return undefined;
    return this.withKeys("delete", [{ k, liveAfter: false }], async () => {
      await this.client().delete(this.keyName(k));
    });
  }

  private bulkGet(): () => Promise<void> {
    const keys = Array.from({ length: 8 }, () => this.keyName(Math.floor(Math.random() * this.options.keys)));
    return () =>
      this.run("bulkGet", async () => {
        await this.client().bulkGet(keys);
      });
  }

  /** Two puts, a delete when a live key is free, and one outbox message. */
  private transaction(): () => Promise<void> {
    const taken: { k: number; liveAfter: boolean }[] = [];
    for (let i = 0; i < 2; i++) {
      const k = this.takeKey(false) ?? this.takeKey(true);
      if (k !== undefined) taken.push({ k, liveAfter: true });
    }
    const doomed = this.takeKey(true);
    if (doomed !== undefined) taken.push({ k: doomed, liveAfter: false });
    const n = this.seq;
    return this.withKeys("transaction", taken, async () => {
      await this.client().transaction({
        operations: taken.map(({ k, liveAfter }) =>
          liveAfter
            ? { op: "put", key: this.keyName(k), value: { n, pad: this.value } }
            : { op: "delete", key: this.keyName(k) },
        ),
        outbox: [{ queue: QUEUE, body: this.messageBody() }],
      });
    });
  }

  private messageBody(): { n: number; poison: boolean } {
    const n = this.seq;
    return { n, poison: n % 10 === 0 };
  }

  private async enqueue(): Promise<void> {
    await this.client().enqueue(QUEUE, this.messageBody());
  }

  /** Leases a few messages; each is acked, or nacked at once if poison, in later slots. */
  private async lease(): Promise<void> {
    const result = await this.client().lease<{ poison?: boolean }>(QUEUE, {
      max: LEASE_MAX,
      visibilityTimeoutMs: VISIBILITY_MS,
    });
    const token = result.leaseToken;
    if (token === null) return;
    for (const m of result.messages) {
      const leased: Leased = { messageId: m.messageId, leaseToken: token, poison: m.body.poison === true };
      this.followUps.push(() => this.settle(leased));
    }
  }

  private settle(m: Leased): Promise<void> {
    return m.poison
      ? this.run("nack", async () => {
          await this.client().nack(QUEUE, m.messageId, m.leaseToken);
        })
      : this.run("ack", async () => {
          await this.client().ack(QUEUE, m.messageId, m.leaseToken);
        });
  }

  /** The subscription's next changes, acked in a later slot; undefined while a delivery is outstanding. */
  private deliver(): (() => Promise<void>) | undefined {
    if (this.deliveryOutstanding || performance.now() < this.deliveryBlockedUntil) return undefined;
    this.deliveryOutstanding = true;
    return () =>
      this.run("deliver", async () => {
        let handedOn = false;
        try {
          const result = await this.client().deliver(SUBSCRIPTION, {
            max: DELIVERY_MAX,
            visibilityTimeoutMs: VISIBILITY_MS,
          });
          const id = result.deliveryId;
          if (id === null) return;
          handedOn = true;
          this.followUps.push(() =>
            this.run("ackDelivery", async () => {
              try {
                await this.client().ackDelivery(SUBSCRIPTION, id);
              } catch (err) {
                this.deliveryBlockedUntil = performance.now() + VISIBILITY_MS;
                throw err;
              } finally {
                this.deliveryOutstanding = false;
              }
            }),
          );
        } finally {
          if (!handedOn) this.deliveryOutstanding = false;
        }
      });
  }

  private dispatch(): () => Promise<void> {
    const channel = this.seq % CHANNELS;
    const n = this.seq;
    return () =>
      this.run("dispatch", async () => {
        const result = await this.client().dispatch(`endurance-${channel}`, "set", { n });
        this.dispatchSeq[channel] = Math.max(this.dispatchSeq[channel]!, result.sequence);
      });
  }

  /** The last few directives of a channel, as a consumer that keeps up reads them. */
  private readDispatch(): () => Promise<void> {
    const channel = this.seq % CHANNELS;
    const after = Math.max(0, this.dispatchSeq[channel]! - 16);
    return () =>
      this.run("readDispatch", async () => {
        await this.client().readDispatch(`endurance-${channel}`, { after, limit: 16 });
      });
  }
}
